"""Every NATS subject and stream name in Heym, and the builders that make them.

Layout of the run stream (`HEYM_RUNS`, subjects `heym.run.>`, `heym.agent.>`, `heym.work.>`,
`heym.timers.>`, `heym.cron.>` and `heym.memory.>`):

- `heym.run.<run>.cmd`              requests into a run from outside (RunRequested, CancelRequested)
- `heym.run.<run>.sched.<service>`  the scheduler's decisions; the last token names the service
                                    that has to act on the decision (`none` when no one does), so
                                    each service's durable consumer filters only its own work
- `heym.run.<run>.node.<inv>`       one node invocation's result, written by the service that
                                    executes it (NodeCompleted / NodeAttemptFailed)
- `heym.agent.<run>.<inv>`          one agent invocation's own history (its request, model
                                    turns, tool dispatches and results, compressions, its end):
                                    outside `heym.run.>` so the scheduler and the history
                                    projection never decode agent turns
- `heym.work.<run>.<service>.<id>`  a work item for a service that is not a scheduler decision
                                    (an agent's sandbox tool call, a canvas node run as a tool),
                                    and later requests about it (its cancellation)
- `heym.work.<run>.review.<id>`     a human review request's own subject (its request, the
                                    token drawn once, its expiry firing, its end)
- `heym.run.<run>.timer`            fired durable timers (`wait` nodes, retry back-off)
- `heym.timers.<run>.<timer>`       the pending timer itself (a JetStream scheduled message whose
                                    target is `heym.run.<run>.timer`, or for a review's expiry
                                    the review's work item)
- `heym.chat.<conversation>.cmd`    a conversation with the Heym Agent: what comes from outside
                                    (messages, edits, cancel, run ends, fired timers)
- `heym.chat.<conversation>.turn`   what the assistant recorded (prompts, model rounds, tools)
- `heym.timers.chat-<conversation>.<timer>` a conversation's pending timer (target: its `.cmd`)
- `heym.cron.schedule.<workflow>`   a cron workflow's schedule (a JetStream cron schedule message,
                                    one per workflow; the server writes each tick to the next one)
- `heym.cron.tick.<workflow>`       the ticks of that schedule (`CronTicked`), each started as a run
- `heym.memory.<workflow>.<node>`   an agent node's persistent memory graph: every change to it
                                    (entities, relationships, merges), written with the subject's
                                    expected last sequence; the node id is escaped (`memory`)

The scheduler's view of a run is `heym.run.<run>.>` (its replay filter and its concurrency
scope); everything recorded for a run, agent turns included, is `heym.*.<run>.>`.
Core (non-stream) subjects: `heym.svc.<service>.health`, `heym.svc.<service>.members` (replicas
announcing themselves) and `heym.query.<service>.<name>`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

RUN_STREAM: Final = "HEYM_RUNS"
RUN_STREAM_SUBJECTS: Final = (
    "heym.run.>",
    "heym.agent.>",
    "heym.work.>",
    "heym.timers.>",
    "heym.chat.>",
    "heym.cron.>",
    "heym.memory.>",
)

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


def members(service: str) -> str:
    """Core subject where a service's replicas announce themselves (partition ownership)."""
    if service not in SERVICES:
        raise SubjectError(f"unknown service {service!r}")
    return f"heym.svc.{service}.members"


def run_all(run_id: str) -> str:
    """Every subject of one run: the replay filter and the per-run concurrency scope."""
    return f"heym.run.{token(run_id)}.>"


def run_everything(run_id: str) -> str:
    """Every subject recorded for one run, agent turns and work items included (streams, audit)."""
    return f"heym.*.{token(run_id)}.>"


def run_commands(run_id: str) -> str:
    return f"heym.run.{token(run_id)}.cmd"


def run_decisions(run_id: str, service: str) -> str:
    if service != NO_SERVICE and service not in SERVICES:
        raise SubjectError(f"unknown service {service!r}")
    return f"heym.run.{token(run_id)}.sched.{service}"


def node(run_id: str, invocation_id: str) -> str:
    return f"heym.run.{token(run_id)}.node.{token(invocation_id)}"


def agent(run_id: str, invocation_id: str) -> str:
    """One agent invocation's aggregate (`heym.agent.<run>.<invocation>`)."""
    return f"heym.agent.{token(run_id)}.{token(invocation_id)}"


def work_item(run_id: str, service: str, item_id: str) -> str:
    """One work item for `service` that is not a scheduler decision."""
    if service not in SERVICES:
        raise SubjectError(f"unknown service {service!r}")
    return f"heym.work.{token(run_id)}.{service}.{token(item_id)}"


def run_timer(run_id: str) -> str:
    return f"heym.run.{token(run_id)}.timer"


def timer_schedule(run_id: str, timer_id: str) -> str:
    return f"heym.timers.{token(run_id)}.{token(timer_id)}"


def cron_schedule(workflow_id: str) -> str:
    """A cron workflow's schedule message (the last one on the subject is the schedule)."""
    return f"heym.cron.schedule.{token(workflow_id)}"


def cron_tick(workflow_id: str) -> str:
    """Where the server writes each tick of a workflow's cron schedule."""
    return f"heym.cron.tick.{token(workflow_id)}"


_PLAIN = re.compile(r"^[A-Za-z0-9-]{1,100}$")


def node_token(node_id: str) -> str:
    """A canvas node id as one subject token, injectively (ids are the user's: any text).

    Ids of letters, digits and dashes stay as they are; otherwise `_` escapes: `__` for `_`,
    `_XX` (hex) for each byte of any other character; a result over 100 characters becomes
    `_h` + the SHA-256 of the id (an escaped token never has `h` after its first `_`)."""
    if _PLAIN.match(node_id):
        return node_id
    out = []
    for ch in node_id:
        if ch == "_":
            out.append("__")
        elif ch.isascii() and (ch.isalnum() or ch == "-"):
            out.append(ch)
        else:
            out.extend(f"_{b:02X}" for b in ch.encode())
    escaped = "".join(out)
    if 0 < len(escaped) <= 100:
        return escaped
    return "_h" + hashlib.sha256(node_id.encode()).hexdigest()


def memory(workflow_id: str, node_id: str) -> str:
    """One agent node's memory graph (`heym.memory.<workflow>.<node token>`)."""
    return f"heym.memory.{token(workflow_id)}.{node_token(node_id)}"


ALL_CRON_SCHEDULES: Final = "heym.cron.schedule.*"
ALL_CRON_TICKS: Final = "heym.cron.tick.*"


def run_id_of(subject: str) -> str:
    """The run id carried by any `heym.run|agent|work.<run>.…` subject."""
    parts = subject.split(".")
    if len(parts) < 4 or parts[0] != "heym" or parts[1] not in ("run", "agent", "work"):
        raise SubjectError(f"not a run subject: {subject!r}")
    return parts[2]


def chat_all(conversation_id: str) -> str:
    """Every subject of one conversation: its replay filter and its concurrency scope."""
    return f"heym.chat.{token(conversation_id)}.>"


def chat_commands(conversation_id: str) -> str:
    return f"heym.chat.{token(conversation_id)}.cmd"


def chat_turns(conversation_id: str) -> str:
    return f"heym.chat.{token(conversation_id)}.turn"


def chat_timer_schedule(conversation_id: str, timer_id: str) -> str:
    return f"heym.timers.chat-{token(conversation_id)}.{token(timer_id)}"


def conversation_of(subject: str) -> str:
    """The conversation id carried by a `heym.chat.<conversation>.…` subject."""
    parts = subject.split(".")
    if len(parts) < 4 or parts[0] != "heym" or parts[1] != "chat":
        raise SubjectError(f"not a conversation subject: {subject!r}")
    return parts[2]


def is_report_target(subject: str) -> bool:
    """Whether a run may report its end to `subject` (`RunRequested.report_to`): only a
    conversation's command subject, so a run request cannot make the scheduler write anywhere
    else."""
    parts = subject.split(".")
    return (
        len(parts) == 4
        and parts[:2] == ["heym", "chat"]
        and parts[3] == "cmd"
        and bool(_TOKEN.match(parts[2]))
    )


# Durable consumer filters, one per consuming purpose.
ALL_RUN_EVENTS: Final = "heym.run.>"
ALL_COMMANDS: Final = "heym.run.*.cmd"
ALL_NODE_EVENTS: Final = "heym.run.*.node.*"
ALL_TIMERS: Final = "heym.run.*.timer"
ALL_AGENT_EVENTS: Final = "heym.agent.>"
# The same sets with the run as the `*` key token: run-partitioned feeds hash that token.
RUN_KEYED: Final = "heym.run.*.>"
AGENT_KEYED: Final = "heym.agent.*.>"
ALL_CHAT_COMMANDS: Final = "heym.chat.*.cmd"
ALL_CHAT_EVENTS: Final = "heym.chat.>"
ALL_MEMORY_EVENTS: Final = "heym.memory.>"


def work_for(service: str) -> str:
    """The decisions a service must act on, across all runs."""
    if service not in SERVICES:
        raise SubjectError(f"unknown service {service!r}")
    return f"heym.run.*.sched.{service}"


def work_items_for(service: str) -> str:
    """The work items (not scheduler decisions) a service must act on, across all runs."""
    if service not in SERVICES:
        raise SubjectError(f"unknown service {service!r}")
    return f"heym.work.*.{service}.*"


def health(service: str) -> str:
    return f"heym.svc.{token(service)}.health"


def query(service: str, name: str) -> str:
    return f"heym.query.{token(service)}.{token(name)}"
