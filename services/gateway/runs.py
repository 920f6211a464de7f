"""Starting runs through the event log and following them: the gateway keeps no run state.

A run starts as one append (`RunRequested` on the run's command subject, expected sequence
0). Callers follow it on a live tail of the run's subjects, opened before the append so no
event can be missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from contracts import subjects
from contracts.base import Envelope
from contracts.nodes import NodeCompleted, NodeRetryScheduled
from contracts.runs import (
    CancelRequested,
    RunCompleted,
    RunOutputReady,
    RunRequested,
    WorkflowSnapshot,
)
from libs.eventlog import EventLog
from libs.results import node_result, retry_result

SENSITIVE_HEADERS = frozenset(
    {
        "authorization",
        "cookie",
        "set-cookie",
        "x-execution-token",
        "x-mcp-key",
        "proxy-authorization",
        "x-api-key",
        "x-auth-token",
        "x-csrf-token",
        "x-session-token",
    }
)


def safe_headers(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items() if k.lower() not in SENSITIVE_HEADERS}


@dataclass
class RunOutcome:
    """What a caller waiting on a run saw: its end (or early output), and its node results."""

    run_id: str
    completed: RunCompleted | None = None
    early: RunOutputReady | None = None
    node_results: list[dict[str, Any]] = field(default_factory=list)


def new_run_request(
    *,
    workflow: WorkflowSnapshot,
    owner_id: str,
    inputs: dict[str, Any],
    test_run: bool,
    trigger_source: str,
    cache: dict[str, WorkflowSnapshot],
    traceparent: str | None,
) -> RunRequested:
    return RunRequested(
        workflow_id=workflow.id,
        workflow_name=workflow.name,
        owner_id=owner_id,
        nodes=workflow.nodes,
        edges=workflow.edges,
        inputs=inputs,
        test_run=test_run,
        trigger_source=trigger_source,
        requested_at_ms=int(time.time() * 1000),
        workflow_cache=cache,
        traceparent=traceparent,
    )


@contextlib.asynccontextmanager
async def started_run(
    event_log: EventLog, request: RunRequested, *, run_id: str | None = None
) -> AsyncIterator[tuple[str, asyncio.Queue[Envelope]]]:
    """Append the run's request and yield its id with a live feed of every event it gets."""
    rid = run_id or uuid.uuid4().hex
    async with event_log.tail(subjects.run_all(rid)) as queue:
        await event_log.append(
            subjects.run_commands(rid),
            [request],
            expected_sequence=0,
            message_id=f"run-{rid}",
            correlation_id=rid,
            traceparent=request.traceparent,
        )
        yield rid, queue


async def wait_for_outcome(
    run_id: str, queue: asyncio.Queue[Envelope], *, timeout: float, early_return: bool
) -> RunOutcome:
    outcome = RunOutcome(run_id=run_id)
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return outcome
        try:
            env = await asyncio.wait_for(queue.get(), remaining)
        except TimeoutError:
            return outcome
        ev = env.event
        if isinstance(ev, NodeCompleted):
            outcome.node_results.append(node_result(env, ev))
        elif isinstance(ev, NodeRetryScheduled):
            outcome.node_results.append(retry_result(env, ev))
        elif isinstance(ev, RunOutputReady) and early_return:
            outcome.early = ev
            return outcome
        elif isinstance(ev, RunCompleted):
            outcome.completed = ev
            return outcome


async def request_cancel(event_log: EventLog, run_id: str, reason: str) -> None:
    await event_log.append(
        subjects.run_commands(run_id),
        [CancelRequested(reason=reason)],
        message_id=f"cancel-{run_id}-{int(time.time())}",
    )


async def run_request(event_log: EventLog, run_id: str) -> tuple[RunRequested | None, bool]:
    """A run's request and whether it has finished (None if there is no such run)."""
    envelopes = await event_log.replay(run_id)
    request = next((e.event for e in envelopes if isinstance(e.event, RunRequested)), None)
    finished = any(isinstance(e.event, RunCompleted) for e in envelopes)
    return request, finished
