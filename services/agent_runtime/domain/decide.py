"""`next_step(state)`: what an agent invocation does next, decided from its fold alone.

Pure: no clock, no I/O. The executor performs the step, records its result on the
invocation's subject, folds it and asks again, until the answer is `Wait` (children are
working; their ends arrive as events) or `Done`. Read it next to `services/scheduler/domain`:
the scheduler decides a run's next events from `RunState`; this decides an agent's next step
from `AgentState`, and every step's outcome is an event that feeds the next decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.agents import AgentFinished, DispatchedCall
from services.agent_runtime.domain.guardrail import blocked, needs_classification
from services.agent_runtime.domain.review import iso_ms, pending_payload
from services.agent_runtime.domain.state import AgentState, call_id

# Tries of one model call (the first and its retries) before the node's own retry policy.
MODEL_ATTEMPTS = 4
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0
RETRY_AFTER_MAX_S = 60.0


@dataclass(frozen=True)
class Start:
    """Assemble the prompt and the tools, and record them."""


@dataclass(frozen=True)
class Classify:
    """Check the user message with the guardrail model before the first model call."""


@dataclass(frozen=True)
class CallModel:
    turn: int
    attempt: int
    grace: bool = False
    fallback: bool = False
    delay_s: float = 0.0


@dataclass(frozen=True)
class GraceLimit:
    """Iterations are used up and no closing answer could be had: finish with the limit text."""

    turn: int


@dataclass(frozen=True)
class RunTools:
    turn: int
    calls: list[dict[str, Any]]


@dataclass(frozen=True)
class Wait:
    """Nothing to do until a child reports (its `agent.tool_result` drives the next step)."""

    on: list[DispatchedCall]


@dataclass(frozen=True)
class Finish:
    turn: int


@dataclass(frozen=True)
class Fail:
    error: str
    retryable: bool


@dataclass(frozen=True)
class Cancel:
    reason: str
    pending: list[tuple[int, dict[str, Any]]]
    dispatched: list[DispatchedCall]


@dataclass(frozen=True)
class Done:
    """Finished: the result only has to be (re)delivered, which is idempotent."""

    finished: AgentFinished | None


@dataclass(frozen=True)
class Paused:
    """Waiting for a human review, this invocation's own or a child's: nothing to do until
    the decision (or the expiry, or a cancel) lands. `payload` is the pending output to
    report up (None until the review service has opened the review)."""

    request_id: str
    payload: dict[str, Any] | None
    own: bool = True


@dataclass(frozen=True)
class ApplyDecision:
    """A reviewer decided: record it as the review call's result (and end at once on a
    refusal); the conversation then goes on from the replayed state."""

    request_id: str


@dataclass(frozen=True)
class Unrequested:
    """Events arrived before the invocation's request (a cancel that raced the dispatch)."""


Step = (
    Start
    | Classify
    | CallModel
    | GraceLimit
    | RunTools
    | Wait
    | Finish
    | Fail
    | Cancel
    | Done
    | Unrequested
    | Paused
    | ApplyDecision
)


def next_step(state: AgentState, *, model_attempts: int = MODEL_ATTEMPTS) -> Step:
    """`model_attempts`: tries of one model request (the first and its retries)."""
    if state.finished is not None or state.legacy_result is not None:
        return Done(state.finished)
    if state.request is None:
        return Unrequested()
    if state.cancel is not None:
        return _cancel(state)
    if state.started is None:
        return Start()
    review = _review_step(state)
    if review is not None:
        return review
    if needs_classification(state):
        return Classify()
    stop = blocked(state.guardrail)
    if stop is not None:
        return Fail(error=stop[0], retryable=stop[1])
    turn = state.current_turn
    number = len(state.turns) + 1
    grace = False
    if turn is not None:
        undispatched = turn.undispatched()
        if undispatched:
            return RunTools(turn=len(state.turns), calls=undispatched)
        if turn.missing():
            pause = state.child_pause(turn)
            if pause is not None:
                return Paused(request_id=pause.request_id, payload=pause.payload, own=False)
            return Wait(on=[turn.dispatched[call_id(c)] for c in turn.missing()])
        if turn.final:
            return Finish(turn=len(state.turns))
        grace = state.model_turns >= state.started.max_tool_iterations
    return _model_call(state, number, grace=grace, attempts=model_attempts)


def _review_step(state: AgentState) -> Step | None:
    review = state.open_review()
    if review is None:
        return None
    if review.decided is not None:
        return ApplyDecision(request_id=review.requested.request_id)
    if review.expired is not None:
        return Fail(
            error=(
                f"human review {review.requested.request_id} expired: no decision was made "
                f"before {iso_ms(review.expired.expires_at_ms)}"
            ),
            retryable=False,
        )
    payload = pending_payload(review) if review.opened is not None else None
    return Paused(request_id=review.requested.request_id, payload=payload)


def _model_call(state: AgentState, turn: int, *, grace: bool, attempts: int) -> Step:
    failures = state.model_failures
    if not failures:
        return CallModel(turn=turn, attempt=1, grace=grace)
    if grace:
        return GraceLimit(turn=turn)  # the closing answer is best-effort: never retried
    primary = [f for f in failures if not f.fallback]
    backup = [f for f in failures if f.fallback]
    has_fallback = bool(state.data.get("fallbackCredentialId") and state.data.get("fallbackModel"))
    if not backup:
        last = primary[-1]
        if last.retryable and len(primary) < attempts:
            return CallModel(
                turn=turn,
                attempt=len(failures) + 1,
                delay_s=backoff_s(len(primary), last.retry_after_s),
            )
        if not has_fallback:
            return Fail(error=last.error, retryable=last.retryable)
        return CallModel(turn=turn, attempt=len(failures) + 1, fallback=True)
    last = backup[-1]
    if last.retryable and len(backup) < attempts:
        return CallModel(
            turn=turn,
            attempt=len(failures) + 1,
            fallback=True,
            delay_s=backoff_s(len(backup), last.retry_after_s),
        )
    return Fail(error=f"{primary[-1].error}; fallback: {last.error}", retryable=last.retryable)


def backoff_s(failed: int, retry_after_s: float | None) -> float:
    """The wait before try `failed + 1`: the server's `Retry-After` when it sent one (capped),
    else exponential. The executor adds jitter on top, so replicas do not retry in step."""
    if retry_after_s is not None and retry_after_s >= 0:
        return min(retry_after_s, RETRY_AFTER_MAX_S)
    return min(BACKOFF_BASE_S * 2.0 ** (failed - 1), BACKOFF_MAX_S)


def _cancel(state: AgentState) -> Cancel:
    assert state.cancel is not None
    pending: list[tuple[int, dict[str, Any]]] = []
    dispatched: list[DispatchedCall] = []
    turn = state.current_turn
    if turn is not None:
        number = len(state.turns)
        for call in turn.missing():
            pending.append((number, call))
            found = turn.dispatched.get(call_id(call))
            if found is not None:
                dispatched.append(found)
    return Cancel(reason=state.cancel.reason, pending=pending, dispatched=dispatched)
