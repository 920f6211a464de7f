"""Run a workflow through the scheduler's pure domain, with stand-in executors for services.

Given events, when decided, then events: `drive` loops decide → fake service results →
decide, firing timers at once, and returns every event in order plus the final state.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contracts.base import Event
from contracts.nodes import (
    ChildRunStarted,
    NodeAttemptFailed,
    NodeCompleted,
    NodeDispatched,
    TimerFired,
    TimerScheduled,
)
from contracts.runs import CancelRequested, RunCompleted, RunRequested, WorkflowSnapshot
from services.scheduler.domain import RunState, decide, evolve

Executor = Callable[[NodeDispatched], Any]


@dataclass
class Trace:
    events: list[Event] = field(default_factory=list)
    state: RunState | None = None
    decisions: list[list[Event]] = field(default_factory=list)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def completed(self) -> RunCompleted:
        (done,) = self.of(RunCompleted)
        return done

    def results(self, label: str) -> list[NodeCompleted]:
        return [e for e in self.of(NodeCompleted) if e.node_label == label]

    def statuses(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for e in self.of(NodeCompleted):
            out.setdefault(e.node_label, []).append(e.status)
        return out


class Fail(Exception):
    """Raise from an executor to make the attempt fail."""


def node(nid: str, ntype: str, label: str | None = None, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label or nid, **data},
    }


def edge(
    source: str, target: str, source_handle: str | None = None, target_handle: str | None = None
) -> dict[str, Any]:
    e: dict[str, Any] = {
        "id": f"{source}->{target}:{source_handle}",
        "source": source,
        "target": target,
    }
    if source_handle:
        e["sourceHandle"] = source_handle
    if target_handle:
        e["targetHandle"] = target_handle
    return e


def drive(
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    *,
    inputs: dict[str, Any] | None = None,
    executors: dict[str, Executor] | None = None,
    test_run: bool = False,
    cache: dict[str, WorkflowSnapshot] | None = None,
    cancel_after: int | None = None,
    depth: int = 0,
    max_rounds: int = 500,
) -> Trace:
    request = RunRequested(
        workflow_id="wf",
        nodes=nodes,
        edges=edges,
        inputs=inputs or {},
        test_run=test_run,
        workflow_cache=cache or {},
        depth=depth,
    )
    run_id = uuid.uuid4().hex
    state = RunState.from_request(run_id, request, 1)
    trace = Trace(events=[request])
    seq = 1
    now = 1_000_000
    pending: list[Event] = []
    executors = executors or {}
    for round_no in range(max_rounds):
        for ev in pending:
            seq += 1
            evolve(state, ev, seq)
            trace.events.append(ev)
        pending = []
        if cancel_after is not None and round_no == cancel_after:
            seq += 1
            cancel = CancelRequested(reason="stop")
            evolve(state, cancel, seq)
            trace.events.append(cancel)
        work = state.copy()
        decision = decide(work, now)
        now += 10
        if not decision.batches and not (state.inflight or state.timers):
            break
        if decision.batches:
            trace.decisions.append(decision.events)
        for _, batch in decision.batches:
            for ev in batch:
                seq += 1
                trace.events.append(ev)
        state = work
        state.last_seq = seq
        for ev in decision.events:
            if isinstance(ev, NodeDispatched):
                pending.append(_execute(ev, executors))
            elif isinstance(ev, TimerScheduled):
                pending.append(TimerFired(timer_id=ev.timer_id))
            elif isinstance(ev, ChildRunStarted) and ev.wait:
                pending.append(
                    NodeCompleted(
                        invocation_id=ev.invocation_id,
                        node_id=ev.node_id,
                        node_label=state.graph.labels[ev.node_id],
                        node_type="execute",
                        status="success",
                        output={
                            "workflow_id": ev.workflow_id,
                            "status": "success",
                            "outputs": {"echo": ev.inputs},
                        },
                    )
                )
        if state.completed is not None and not pending:
            break
    trace.state = state
    return trace


def _execute(ev: NodeDispatched, executors: dict[str, Executor]) -> Event:
    fn = executors.get(ev.node_label) or executors.get(ev.node_type)
    try:
        output = fn(ev) if fn else {"ran": ev.node_label, "inputs": ev.inputs}
    except Fail as exc:
        return NodeAttemptFailed(
            invocation_id=ev.invocation_id,
            node_id=ev.node_id,
            node_label=ev.node_label,
            node_type=ev.node_type,
            attempt=ev.attempt,
            error=str(exc),
        )
    return NodeCompleted(
        invocation_id=ev.invocation_id,
        node_id=ev.node_id,
        node_label=ev.node_label,
        node_type=ev.node_type,
        status="success",
        output=output,
        attempt=ev.attempt,
    )
