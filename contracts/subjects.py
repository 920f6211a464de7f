"""Every NATS subject and stream name in Heym, and the builders that make them.

Layout of the run stream (`HEYM_RUNS`, subjects `heym.run.>` and `heym.timers.>`):

- `heym.run.<run>.cmd`              requests into a run from outside (RunRequested, CancelRequested)
- `heym.run.<run>.sched.<service>`  the scheduler's decisions; the last token names the service
                                    that has to act on the decision (`none` when no one does), so
                                    each service's durable consumer filters only its own work
- `heym.run.<run>.node.<inv>`       one node invocation's own history, written by the service
                                    that executes it (results, agent turns, tool calls)
- `heym.run.<run>.timer`            fired durable timers (`wait` nodes, retry back-off)
- `heym.timers.<run>.<timer>`       the pending timer itself (a JetStream scheduled message whose
                                    target is `heym.run.<run>.timer`)

A run is the union of its subjects: replay reads `heym.run.<run>.>` in stream order.
Core (non-stream) subjects: `heym.svc.<service>.health` and `heym.query.<service>.<name>`.
"""

from __future__ import annotations

import re
from typing import Final

RUN_STREAM: Final = "HEYM_RUNS"
RUN_STREAM_SUBJECTS: Final = ("heym.run.>", "heym.timers.>")

SERVICES: Final = ("gateway", "scheduler", "agent_runtime", "tool_sandbox", "review")
NO_SERVICE: Final = "none"

_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


class SubjectError(ValueError):
    """A value that cannot be a subject token (dots, wildcards, spaces or empty)."""


def token(value: str) -> str:
    """Check that `value` is safe as one subject token; ids from users never reach subjects."""
    if not _TOKEN.match(value):
        raise SubjectError(f"not a valid subject token: {value!r}")
    return value


def run_all(run_id: str) -> str:
    """Every subject of one run: the replay filter and the per-run concurrency scope."""
    return f"heym.run.{token(run_id)}.>"


def run_commands(run_id: str) -> str:
    return f"heym.run.{token(run_id)}.cmd"


def run_decisions(run_id: str, service: str) -> str:
    if service != NO_SERVICE and service not in SERVICES:
        raise SubjectError(f"unknown service {service!r}")
    return f"heym.run.{token(run_id)}.sched.{service}"


def node(run_id: str, invocation_id: str) -> str:
    return f"heym.run.{token(run_id)}.node.{token(invocation_id)}"


def run_timer(run_id: str) -> str:
    return f"heym.run.{token(run_id)}.timer"


def timer_schedule(run_id: str, timer_id: str) -> str:
    return f"heym.timers.{token(run_id)}.{token(timer_id)}"


def run_id_of(subject: str) -> str:
    """The run id carried by any `heym.run.<run>.…` subject."""
    parts = subject.split(".")
    if len(parts) < 4 or parts[0] != "heym" or parts[1] != "run":
        raise SubjectError(f"not a run subject: {subject!r}")
    return parts[2]


# Durable consumer filters, one per consuming purpose.
ALL_RUN_EVENTS: Final = "heym.run.>"
ALL_COMMANDS: Final = "heym.run.*.cmd"
ALL_NODE_EVENTS: Final = "heym.run.*.node.*"
ALL_TIMERS: Final = "heym.run.*.timer"


def work_for(service: str) -> str:
    """The decisions a service must act on, across all runs."""
    if service not in SERVICES:
        raise SubjectError(f"unknown service {service!r}")
    return f"heym.run.*.sched.{service}"


def health(service: str) -> str:
    return f"heym.svc.{token(service)}.health"


def query(service: str, name: str) -> str:
    return f"heym.query.{token(service)}.{token(name)}"
