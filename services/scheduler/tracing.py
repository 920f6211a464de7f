"""The scheduler's spans: node invocations it completes itself (pure nodes, waits, skipped
nothing), an Execute node when its child run's end is recorded, and each run's root span
when the run ends. Written after the append that records the end succeeded, so once."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from contracts.base import Event
from contracts.nodes import NodeAttemptFailed, NodeCompleted
from contracts.runs import RunCompleted, RunRequested
from libs import telemetry
from libs.telemetry import TraceContext
from services.scheduler.domain.context import direct_inputs
from services.scheduler.domain.state import RunState

_known: OrderedDict[str, TraceContext | None] = OrderedDict()
_KNOWN_MAX = 10_000


def run_trace(run_id: str, request: RunRequested) -> TraceContext | None:
    """The run's root context (recorded in its request, or derived like the gateway does),
    remembered for the runs in hand: every decision's append carries it."""
    if not telemetry.current().enabled:
        return telemetry.run_context(run_id, request.run_traceparent, request.traceparent)
    if run_id in _known:
        return _known[run_id]
    ctx = telemetry.run_context(run_id, request.run_traceparent, request.traceparent)
    _known[run_id] = ctx
    if len(_known) > _KNOWN_MAX:
        _known.popitem(last=False)
    return ctx


def decided(before: RunState, after: RunState, events: list[Event]) -> None:
    """Spans of a decision just appended: the nodes it evaluated and, if it ended the run,
    the run's own span. Results of work done elsewhere (a service, a child run) already
    have their span, written by whoever recorded them, and are only resolved here."""
    if not telemetry.current().enabled:
        return
    run = run_trace(after.run_id, after.request)
    elsewhere = set(before.inflight) | {f.invocation_id for f in before.failures.values()}
    for ev in events:
        if isinstance(ev, NodeCompleted | NodeAttemptFailed):
            if ev.invocation_id in elsewhere:
                continue
            elsewhere.add(ev.invocation_id)  # a failure resolved in the same decision
            if isinstance(ev, NodeCompleted) and ev.status == "skipped":
                continue
            telemetry.node_span(
                after.run_id,
                ev,
                telemetry.node_context(run, after.run_id, ev.invocation_id),
                parent_span_id=run.span_id if run is not None else None,
                start_ms=_wait_started(before, ev),
                inputs=_inputs(after, ev.node_id),
            )
        elif isinstance(ev, RunCompleted):
            ended(after, ev, run)


def ended(state: RunState, done: RunCompleted, run: TraceContext | None = None) -> None:
    if not telemetry.current().enabled:
        return
    telemetry.workflow_span(
        state.run_id,
        state.request,
        run or run_trace(state.run_id, state.request),
        started_at_ms=state.started_at_ms,
        done=done,
    )


def execute_node_done(child: RunState, result: NodeCompleted | NodeAttemptFailed) -> None:
    """The Execute node that waited for `child` has its result: its span (the child run's
    parent, whose context the child's request carries)."""
    parent = child.request.parent
    if parent is None or not telemetry.current().enabled:
        return
    telemetry.node_span(
        parent.run_id,
        result,
        TraceContext.parse(child.request.traceparent),
        start_ms=child.request.requested_at_ms or child.started_at_ms,
        inputs=child.request.inputs.get("body") if isinstance(child.request.inputs, dict) else None,
    )


def _wait_started(before: RunState, ev: NodeCompleted | NodeAttemptFailed) -> int | None:
    """A wait node's span starts when its timer was set (it ends when the timer fired)."""
    timer = before.timers.get(f"wait-{ev.invocation_id}")
    if timer is None:
        return None
    try:
        duration = max(0.0, float(before.graph.data[ev.node_id].get("duration", 1000)))
    except (TypeError, ValueError, KeyError):
        return None
    return timer.fire_at_ms - int(duration)


def _inputs(state: RunState, node_id: str) -> Any:
    if not telemetry.current().capture_io or node_id not in state.graph.nodes:
        return None
    return direct_inputs(state, node_id)
