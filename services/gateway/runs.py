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

import msgspec

from contracts import subjects
from contracts.base import Envelope
from contracts.nodes import ChildRunStarted, NodeCompleted, NodeRetryScheduled
from contracts.runs import (
    CancelRequested,
    RunCompleted,
    RunOutputReady,
    RunPaused,
    RunRequested,
    RunResumed,
    WorkflowSnapshot,
)
from libs import telemetry
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
    # The run waits for a human review (status `pending`).
    paused: RunPaused | None = None
    node_results: list[dict[str, Any]] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


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
    event_log: EventLog, request: RunRequested, *, run_id: str | None = None, watch: bool = False
) -> AsyncIterator[tuple[str, asyncio.Queue[Envelope]]]:
    """Append the run's request and yield its id with a live feed of every event it gets.

    The feed is an ordered consumer (nothing missed: for streams) or, with `watch`, a core
    subscription (no consumer to create: for a caller that confirms the end from the log).
    """
    rid = run_id or uuid.uuid4().hex
    if request.run_traceparent is None:
        # The run's trace: a child of the caller's `traceparent`, or a trace of its own.
        run_trace = telemetry.header_of(telemetry.new_run_context(rid, request.traceparent))
        request = msgspec.structs.replace(request, run_traceparent=run_trace)
    async with contextlib.AsyncExitStack() as stack:
        queue: asyncio.Queue[Envelope]
        if watch:
            queue = (await stack.enter_async_context(event_log.watch(subjects.run_all(rid)))).queue
        else:
            queue = await stack.enter_async_context(event_log.tail(subjects.run_everything(rid)))
        await event_log.append(
            subjects.run_commands(rid),
            [request],
            expected_sequence=0,
            message_id=f"run-{rid}",
            correlation_id=rid,
            traceparent=request.run_traceparent,
        )
        yield rid, queue


async def wait_for_outcome(
    event_log: EventLog,
    run_id: str,
    queue: asyncio.Queue[Envelope],
    *,
    timeout: float,
    early_return: bool,
    with_results: bool,
) -> RunOutcome:
    """Wait on a watch for the run's end (or early output); the log has the last word.

    The watch may have missed events (core delivery), so the node results come from a
    replay, and a quiet watch is checked against the log every few seconds.
    """
    outcome = RunOutcome(run_id=run_id)
    deadline = time.monotonic() + timeout
    seen = 0  # the last sequence seen: the results' replay must reach it (a lagging replica)
    while outcome.completed is None and outcome.early is None and outcome.paused is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            env = await asyncio.wait_for(queue.get(), min(remaining, 5.0))
        except TimeoutError:
            envelopes = await event_log.replay(run_id)
            seen = max([seen, *(e.sequence for e in envelopes)])
            _take(outcome, envelopes, early_return=early_return)
            continue
        seen = max(seen, env.sequence)
        _take(outcome, [env], early_return=early_return)
    if with_results and (
        outcome.completed is not None or outcome.early is not None or outcome.paused is not None
    ):
        outcome.node_results, outcome.children = [], []
        envelopes = await event_log.replay(run_id, through=seen)
        _take(outcome, envelopes, early_return=early_return, results=True)
    return outcome


def _take(
    outcome: RunOutcome, envelopes: list[Envelope], *, early_return: bool, results: bool = False
) -> None:
    for env in envelopes:
        ev = env.event
        if results and isinstance(ev, NodeCompleted):
            outcome.node_results.append(node_result(env, ev))
        elif results and isinstance(ev, NodeRetryScheduled):
            outcome.node_results.append(retry_result(env, ev))
        elif results and isinstance(ev, ChildRunStarted):
            outcome.children.append(ev.child_run_id)
        elif isinstance(ev, RunOutputReady) and early_return and outcome.early is None:
            outcome.early = ev
        elif isinstance(ev, RunCompleted):
            outcome.completed = ev
            outcome.paused = None
        elif isinstance(ev, RunPaused) and outcome.completed is None:
            outcome.paused = ev
        elif isinstance(ev, RunResumed):
            outcome.paused = None


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
