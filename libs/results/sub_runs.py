"""Heym's `sub_workflow_executions` (§2.12): the child runs a run started, read from the log."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from contracts.base import Envelope
from contracts.nodes import ChildRunStarted, NodeCompleted, NodeRetryScheduled
from contracts.runs import RunCompleted, RunRequested
from contracts.workflows import MAX_SUB_WORKFLOW_DEPTH
from libs.eventlog import EventLog
from libs.results.shapes import node_result, numbered, retry_result, strip_private


def child_runs(envelopes: Iterable[Envelope]) -> list[str]:
    """The ids of the child runs started by Execute nodes, in the order they started."""
    seen: list[str] = []
    for env in envelopes:
        ev = env.event
        if isinstance(ev, ChildRunStarted) and ev.child_run_id not in seen:
            seen.append(ev.child_run_id)
    return seen


async def sub_workflow_executions(
    event_log: EventLog, child_ids: list[str], *, depth: int = 0
) -> list[dict[str, Any]]:
    """One record per finished child run, each followed by its own children's records.

    A child still running (an `executeDoNotWait` child) is not reported yet.
    """
    records: list[dict[str, Any]] = []
    if depth >= MAX_SUB_WORKFLOW_DEPTH:
        return records
    for child_id in child_ids:
        envelopes = await event_log.replay(child_id)
        record = _record(envelopes)
        if record is None:
            continue
        records.append(record)
        records.extend(
            await sub_workflow_executions(event_log, child_runs(envelopes), depth=depth + 1)
        )
    return records


def _record(envelopes: list[Envelope]) -> dict[str, Any] | None:
    request: RunRequested | None = None
    done: RunCompleted | None = None
    rows: list[dict[str, Any]] = []
    for env in envelopes:
        ev = env.event
        if isinstance(ev, RunRequested):
            request = ev
        elif isinstance(ev, RunCompleted):
            done = ev
        elif isinstance(ev, NodeCompleted):
            rows.append(node_result(env, ev))
        elif isinstance(ev, NodeRetryScheduled):
            rows.append(retry_result(env, ev))
    if request is None or done is None:
        return None
    return {
        "workflow_id": request.workflow_id,
        "workflow_name": request.workflow_name,
        "inputs": request.inputs,
        "outputs": strip_private(done.outputs),
        "status": done.status,
        "execution_time_ms": done.execution_time_ms,
        "node_results": numbered(rows),
        "trigger_source": request.trigger_source,
    }
