"""A run paused for a human review: when the pause is announced (`run.paused`, history status
`pending`) and when the run goes on again (`run.resumed`). Pure, like `decide`."""

from __future__ import annotations

from contracts.runs import RunPaused, RunResumed
from services.scheduler.domain.evolve import pending_request
from services.scheduler.domain.state import RunState


def pause_event(s: RunState, now_ms: int) -> RunPaused | None:
    """`run.paused` once everything else has drained: no invocation in flight but the paused
    ones, no timer, no failure to decide; once per review (a later checkpoint pauses again)."""
    if not s.paused or s.timers or s.failures:
        return None
    paused = {ev.invocation_id for ev in s.paused.values()}
    if any(inv not in paused for inv in s.inflight):
        return None
    node_id, latest = next(reversed(s.paused.items()))
    request_id = pending_request(latest)
    if s.run_paused == request_id:
        return None
    review = latest.output if isinstance(latest.output, dict) else {}
    return RunPaused(
        node_id=node_id,
        request_id=request_id,
        outputs={s.graph.labels[n]: ev.output for n, ev in s.paused.items()},
        review=review,
        execution_time_ms=float(max(0, now_ms - (s.started_at_ms or now_ms))),
    )


def resumed_event(s: RunState) -> RunResumed | None:
    """`run.resumed` once the review the run announced is no longer what it waits for."""
    if s.run_paused is None:
        return None
    if s.run_paused in {pending_request(ev) for ev in s.paused.values()}:
        return None
    return RunResumed(node_id=s.run_paused_node, request_id=s.run_paused)
