"""`decide(state, now_ms)`: what a run does next, as events (pure: the caller appends them).

One decision goes as far as it can without waiting: it evaluates every ready pure node, then
the nodes those make ready, and so on (a chain of pure nodes is one decision, one append),
and dispatches every ready side-effecting node. Each event is folded into the working state
as it is emitted, so the decision sees its own consequences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contracts.base import Event
from contracts.catalog import too_large
from contracts.nodes import (
    ChildRunStarted,
    NodeAttemptFailed,
    NodeCompleted,
    NodeDispatched,
    NodeRetryScheduled,
    TimerScheduled,
)
from contracts.runs import RunCompleted, RunOutputReady, RunStarted
from contracts.subjects import NO_SERVICE
from contracts.workflows import MAX_SUB_WORKFLOW_DEPTH, NODE_TYPES
from services.scheduler.domain.context import NodeCall, upstream_outputs
from services.scheduler.domain.dispatching import (
    agent_context,
    child_run_id,
    idempotency_key,
    masker,
    number,
    seconds,
)
from services.scheduler.domain.evolve import evolve
from services.scheduler.domain.execute_node import child_inputs
from services.scheduler.domain.nodes import PURE_NODES, Outcome
from services.scheduler.domain.outputs import final_outputs
from services.scheduler.domain.pause import pause_event, resumed_event
from services.scheduler.domain.state import SUCCESS, WAITING, RunState


@dataclass
class Decision:
    """Event batches in append order, each for the service that must act on it."""

    batches: list[tuple[str, list[Event]]] = field(default_factory=list)

    @property
    def events(self) -> list[Event]:
        return [e for _, batch in self.batches for e in batch]


# The largest single event a decision may hold: the stream's message limit (8 MiB by default)
# minus room for headers. A node output, a dispatch or a run's outputs over it fails clearly
# instead of making an append fail for ever (which would leave the run "running").
DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024 - 64 * 1024


def _wait_ms(data: Mapping[str, Any]) -> int:
    """A `wait` node's duration in milliseconds (1 s when it is missing or not a number)."""
    try:
        return int(max(0.0, float(data.get("duration", 1000))))
    except (TypeError, ValueError):
        return 1000


def decide(
    state: RunState, now_ms: int, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> Decision:
    """Works on `state` in place: pass a `copy()` and keep it only if the append succeeds."""
    decider = _Decider(state, now_ms, max_event_bytes)
    decider.run()
    return decider.decision()


class _Decider:
    def __init__(self, state: RunState, now_ms: int, max_event_bytes: int) -> None:
        self.s = state
        self.now = now_ms
        self.max_bytes = max_event_bytes
        self.out: list[tuple[str, Event]] = []

    # -- plumbing ---------------------------------------------------------------------------
    def emit(self, event: Event, target: str = NO_SERVICE) -> None:
        self.out.append((target, event))
        evolve(self.s, event, self.s.last_seq)

    def decision(self) -> Decision:
        targets: list[str] = []
        for target, _ in self.out:
            if target != NO_SERVICE and target not in targets:
                targets.append(target)
        if not self.out:
            return Decision()
        first = targets[0] if targets else NO_SERVICE
        batches: list[tuple[str, list[Event]]] = [
            (first, [e for t, e in self.out if t in (NO_SERVICE, first)])
        ]
        for target in targets[1:]:
            batches.append((target, [e for t, e in self.out if t == target]))
        return Decision(batches=batches)

    def new_invocation(self) -> str:
        return f"i{self.s.next_invocation}"

    # -- the decision -----------------------------------------------------------------------
    def run(self) -> None:
        s = self.s
        if s.completed is not None:
            return
        if not s.started:
            self.emit(RunStarted(workflow_id=s.request.workflow_id, started_at_ms=self.now))
        if s.cancel_requested:
            self._finish("cancelled", error=s.cancel_reason or "cancelled")
            return
        resumed = resumed_event(s)
        if resumed is not None:
            self.emit(resumed)
        while True:
            progressed = self._resolve_failures()
            progressed = self._fire_timers() or progressed
            progressed = self._start_ready() or progressed
            if progressed:
                continue
            if s.inflight or s.timers or s.failures:
                paused = pause_event(s, self.now)
                if paused is not None:
                    self.emit(paused)
                return  # waiting for a service, a child run, a timer or a human review
            if s.first_error is not None and s.graph.error_handlers and not s.error_flow:
                for handler in s.graph.error_handlers:
                    self._start(handler, attempt=1)
                continue
            self._finish("error" if s.first_error is not None else "success")
            return

    def _start_ready(self) -> bool:
        s = self.s
        if s.error_flow:
            pool: list[str] = [n for n in s.graph.order if n in s.graph.error_flow]
        elif s.first_error is None:
            pool = s.graph.main
            if s.paused:
                # Paused for a review: only the review branches run; the main path waits.
                pool = [n for n in pool if n in s.review_branch]
        else:
            return False  # a failed run schedules nothing new; in-flight work drains
        progressed = False
        for nid in pool:
            if nid in s.status or s.counts.get(nid, 0) > 0:
                continue
            if s.first_error is not None and not s.error_flow:
                break
            self._start(nid, attempt=1)
            progressed = True
        return progressed

    def _start(self, nid: str, *, attempt: int) -> None:
        s = self.s
        graph = s.graph
        ntype = graph.types[nid]
        data = graph.data[nid]
        if nid in s.skip_marks or nid in s.disabled:
            self._completed(nid, "skipped", output={}, attempt=attempt)
            return
        if s.request.test_run and data.get("pinnedData") is not None:
            pinned = data["pinnedData"]
            output = pinned if isinstance(pinned, dict) else {"value": pinned}
            self._completed(nid, "success", output=output, metadata={"pinned": True})
            return
        if ntype == "wait":
            self._wait(nid)
        elif ntype == "execute":
            self._execute(nid, attempt)
        elif ntype in PURE_NODES:
            self._evaluate(nid, attempt)
        elif ntype in NODE_TYPES:
            self._dispatch(nid, attempt)
        else:
            call = NodeCall(state=s, node_id=nid, now_ms=self.now)
            self._completed(nid, "success", output={"passthrough": call.inputs})

    # -- node kinds -------------------------------------------------------------------------
    def _evaluate(self, nid: str, attempt: int) -> None:
        call = NodeCall(state=self.s, node_id=nid, now_ms=self.now)
        try:
            outcome = PURE_NODES[self.s.graph.types[nid]](call)
        except Exception as exc:  # an evaluator bug must fail the node, not the scheduler
            outcome = Outcome.fail(f"node {call.label!r} failed: {type(exc).__name__}: {exc}")
        if outcome.error is None:
            why = too_large(outcome.output, self.max_bytes)
            if why is not None:
                outcome = Outcome.fail(
                    f"node {call.label!r} produced an output that cannot be stored: {why}",
                    retryable=False,
                )
        if outcome.error is not None:
            self._attempt_failed(nid, attempt, outcome)
            return
        self._completed(
            nid, "success", output=outcome.output, attempt=attempt, metadata=outcome.metadata
        )
        graph = self.s.graph
        if (
            graph.types[nid] == "output"
            and graph.data[nid].get("allowDownstream")
            and not self.s.output_ready
            and nid not in graph.error_flow
        ):
            recorded = self.s.outputs.get(nid)  # as recorded: masked
            elapsed = float(max(0, self.now - (self.s.started_at_ms or self.now)))
            self.emit(
                RunOutputReady(
                    node_id=nid, outputs={graph.labels[nid]: recorded}, execution_time_ms=elapsed
                )
            )

    def _dispatch(self, nid: str, attempt: int) -> None:
        s = self.s
        graph = s.graph
        inv = self.new_invocation()
        call = NodeCall(state=s, node_id=nid, now_ms=self.now)
        service = NODE_TYPES[graph.types[nid]].executor
        dispatch = NodeDispatched(
            invocation_id=inv,
            node_id=nid,
            node_label=graph.labels[nid],
            node_type=graph.types[nid],
            service=service,
            attempt=attempt,
            node=dict(graph.nodes[nid]),
            inputs=call.inputs,
            upstream=upstream_outputs(s, nid),
            vars=dict(s.vars),
            idempotency_key=idempotency_key(s.run_id, nid, inv, attempt),
            dispatched_at_ms=self.now,
            timezone=s.request.timezone,
            workflow_id=s.request.workflow_id,
            owner_id=s.request.owner_id,
            depth=s.depth,
            test_run=s.request.test_run,
            trigger_source=s.request.trigger_source,
            globals=s.request.globals,
            review_branch=s.request.review_branch or nid in s.review_branch,
            **agent_context(s, nid),
        )
        why = too_large(dispatch, self.max_bytes)
        if why is not None:
            message = f"the inputs of node {graph.labels[nid]!r} cannot be dispatched: {why}"
            self._attempt_failed(nid, attempt, Outcome.fail(message, retryable=False))
            return
        self.emit(dispatch, target=service)

    def _wait(self, nid: str) -> None:
        inv = self.new_invocation()
        self.emit(
            TimerScheduled(
                timer_id=f"wait-{inv}",
                fire_at_ms=self.now + _wait_ms(self.s.graph.data[nid]),
                node_id=nid,
                purpose="wait",
                invocation_id=inv,
                node_label=self.s.graph.labels[nid],
            )
        )

    def _execute(self, nid: str, attempt: int) -> None:
        s = self.s
        data = s.graph.data[nid]
        target = str(data.get("executeWorkflowId") or "")
        call = NodeCall(state=s, node_id=nid, now_ms=self.now)
        if target not in s.request.workflow_cache:
            self._attempt_failed(
                nid,
                attempt,
                Outcome.fail(
                    f"sub-workflow {target!r} does not exist or is not yours", retryable=False
                ),
            )
            return
        if s.depth + 1 > MAX_SUB_WORKFLOW_DEPTH:
            self._attempt_failed(
                nid,
                attempt,
                Outcome.fail(
                    f"sub-workflow depth limit of {MAX_SUB_WORKFLOW_DEPTH} reached: node "
                    f"{call.label!r} at depth {s.depth} cannot start another sub-workflow",
                    retryable=False,
                ),
            )
            return
        inputs = child_inputs(call)
        if isinstance(inputs, Outcome):
            self._attempt_failed(nid, attempt, inputs)
            return
        inv = self.new_invocation()
        wait = not data.get("executeDoNotWait")
        self.emit(
            ChildRunStarted(
                invocation_id=inv,
                node_id=nid,
                child_run_id=child_run_id(s.run_id, inv),
                workflow_id=target,
                wait=wait,
                inputs=inputs,
                attempt=attempt,
                node_label=s.graph.labels[nid],
            )
        )
        if not wait:
            self._completed(
                nid,
                "success",
                output={"status": "dispatched", "workflow_id": target},
                invocation=inv,
            )

    # -- failures, retries, timers ----------------------------------------------------------
    def _attempt_failed(self, nid: str, attempt: int, outcome: Outcome) -> None:
        graph = self.s.graph
        mask = masker(self.s)
        self.emit(
            NodeAttemptFailed(
                invocation_id=self.new_invocation(),
                node_id=nid,
                node_label=graph.labels[nid],
                node_type=graph.types[nid],
                attempt=attempt,
                error=mask.text(outcome.error or "failed"),
                retryable=outcome.retryable,
                output=mask.value(outcome.output),
                started_at_ms=self.now,
                finished_at_ms=self.now,
            )
        )

    def _resolve_failures(self) -> bool:
        s = self.s
        progressed = False
        for nid, failure in list(s.failures.items()):
            data = s.graph.data[nid]
            max_attempts = (
                number(data.get("retryMaxAttempts"), 3) if data.get("retryEnabled") else 1
            )
            if failure.retryable and failure.attempt < max_attempts and not s.cancel_requested:
                wait_s = max(0.0, seconds(data.get("retryWaitSeconds"), 5.0))
                timer_id = f"retry-{failure.invocation_id}"
                self.emit(
                    NodeRetryScheduled(
                        node_id=nid,
                        node_label=failure.node_label,
                        node_type=failure.node_type,
                        failed_invocation_id=failure.invocation_id,
                        attempt=failure.attempt,
                        max_attempts=max_attempts,
                        wait_s=wait_s,
                        error=failure.error,
                        timer_id=timer_id,
                    )
                )
                self.emit(
                    TimerScheduled(
                        timer_id=timer_id,
                        fire_at_ms=self.now + int(wait_s * 1000),
                        node_id=nid,
                        purpose="retry",
                        node_label=failure.node_label,
                    )
                )
            elif data.get("onErrorEnabled"):
                self._completed(
                    nid,
                    "success",
                    output={"error": failure.error, "_errorBranch": True},
                    attempt=failure.attempt,
                    invocation=failure.invocation_id,
                    started_at_ms=failure.started_at_ms,
                )
            else:
                output = failure.output if failure.output is not None else {"error": failure.error}
                self._completed(
                    nid,
                    "error",
                    output=output,
                    error=failure.error,
                    attempt=failure.attempt,
                    invocation=failure.invocation_id,
                    started_at_ms=failure.started_at_ms,
                    metadata=dict(failure.metadata),
                )
            progressed = True
        return progressed

    def _fire_timers(self) -> bool:
        s = self.s
        progressed = False
        for timer_id in list(s.fired):
            timer = s.timers.get(timer_id)
            if timer is None or s.status.get(timer.node_id) != WAITING:
                continue
            if timer.purpose == "wait":
                call = NodeCall(state=s, node_id=timer.node_id, now_ms=self.now)
                # The wait began when its timer was set: its result spans the wait (Heym's
                # wait node sleeps inside the node), so history shows how long it waited.
                waited = _wait_ms(s.graph.data[timer.node_id])
                self._completed(
                    timer.node_id,
                    "success",
                    output=call.first_input,
                    invocation=timer.invocation_id,
                    started_at_ms=min(self.now, max(0, timer.fire_at_ms - waited)),
                )
            else:
                self._start(timer.node_id, attempt=s.attempts.get(timer.node_id, 1) + 1)
            progressed = True
        return progressed

    # -- results ----------------------------------------------------------------------------
    def _completed(
        self,
        nid: str,
        status: str,
        *,
        output: Any = None,
        error: str | None = None,
        attempt: int = 1,
        invocation: str | None = None,
        started_at_ms: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        graph = self.s.graph
        mask = masker(self.s)
        self.emit(
            NodeCompleted(
                invocation_id=invocation or self.new_invocation(),
                node_id=nid,
                node_label=graph.labels[nid],
                node_type=graph.types[nid],
                status=status,  # type: ignore[arg-type]
                output=mask.value(output),
                error=mask.text(error) if error is not None else None,
                attempt=attempt,
                started_at_ms=started_at_ms if started_at_ms is not None else self.now,
                finished_at_ms=self.now,
                metadata=metadata or {},
            )
        )

    def _finish(self, status: str, *, error: str | None = None) -> None:
        s = self.s
        http_status: int | None = None
        if status == "error" and s.first_error is not None:
            error = s.first_error.error
            outputs = s.error_flow_output or {"error": error}
            if isinstance(s.first_error.output, dict):
                code = s.first_error.output.get("httpStatusCode")
                http_status = code if isinstance(code, int) else None
        elif status == "success":
            outputs = final_outputs(s)
            why = too_large(outputs, self.max_bytes)
            if why is not None:
                status = "error"
                error = f"the run's outputs cannot be stored: {why}"
                outputs = {"error": error}
        else:
            outputs = {}
        self.emit(
            RunCompleted(
                status=status,  # type: ignore[arg-type]
                outputs=outputs,
                error=error,
                http_status=http_status,
                execution_time_ms=float(max(0, self.now - (s.started_at_ms or self.now))),
                finished_at_ms=self.now,
            )
        )


__all__ = ["SUCCESS", "Decision", "child_run_id", "decide", "idempotency_key"]
