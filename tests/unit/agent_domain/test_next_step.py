"""The agent decider: given the invocation's events, then the next step (no NATS, no model)."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.agents import (
    AgentCancelRequested,
    AgentFinished,
    AgentRequested,
    AgentStarted,
    DispatchedCall,
    LlmCallRecorded,
    ModelCallFailed,
    SubAgentDispatched,
    ToolCallRecorded,
    ToolCallsDispatched,
)
from contracts.base import Event
from services.agent_runtime.domain import (
    AgentState,
    CallModel,
    Cancel,
    Done,
    Fail,
    Finish,
    GraceLimit,
    RunTools,
    Start,
    Unrequested,
    Wait,
    backoff_s,
    evolve,
    next_step,
)

pytestmark = pytest.mark.unit


def request(**data: Any) -> AgentRequested:
    return AgentRequested(
        invocation_id="i2",
        node_id="a",
        node_label="planner",
        node={"id": "a", "type": "agent", "data": {"label": "planner", **data}},
    )


def started(max_iterations: int = 30) -> AgentStarted:
    return AgentStarted(
        invocation_id="i2",
        node_id="a",
        node_label="planner",
        messages=[{"role": "user", "content": "hi"}],
        max_tool_iterations=max_iterations,
    )


def llm(turn: int, *calls: str, text: str | None = None) -> LlmCallRecorded:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": c, "type": "function", "function": {"name": "call_sub_agent", "arguments": "{}"}}
            for c in calls
        ]
    return LlmCallRecorded(turn=turn, model="m", message=message)


def dispatched(turn: int, *calls: str) -> ToolCallsDispatched:
    return ToolCallsDispatched(
        turn=turn,
        calls=[
            DispatchedCall(tool_call_id=c, name="call_sub_agent", source="sub_agent", target=c)
            for c in calls
        ],
    )


def result(turn: int, call: str, status: str = "success") -> ToolCallRecorded:
    return ToolCallRecorded(
        turn=turn,
        tool_call_id=call,
        name="call_sub_agent",
        source="sub_agent",
        arguments="",
        result={"text": call},
        status=status,  # type: ignore[arg-type]
        started_at_ms=0,
        finished_at_ms=1,
        elapsed_ms=1.0,
    )


def fold(*events: Event) -> AgentState:
    state = AgentState()
    for seq, ev in enumerate(events, start=1):
        evolve(state, ev, seq)
    return state


def failed(
    turn: int,
    attempt: int,
    *,
    retryable: bool = True,
    retry_after: float | None = None,
    fallback: bool = False,
) -> ModelCallFailed:
    return ModelCallFailed(
        turn=turn,
        attempt=attempt,
        error=f"HTTP 429 try {attempt}",
        retryable=retryable,
        status_code=429,
        retry_after_s=retry_after,
        fallback=fallback,
    )


def test_a_new_invocation_starts_then_asks_the_model() -> None:
    assert next_step(fold(request())) == Start()
    assert next_step(fold(request(), started())) == CallModel(turn=1, attempt=1)


def test_events_before_the_request_wait_for_it() -> None:
    assert next_step(fold(AgentCancelRequested(reason="x"))) == Unrequested()
    # ... and once the request arrives, the cancel that came first is honoured
    assert isinstance(next_step(fold(AgentCancelRequested(reason="x"), request())), Cancel)


def test_tool_calls_are_dispatched_then_waited_for_without_any_step() -> None:
    state = fold(request(), started(), llm(1, "c1", "c2"))
    step = next_step(state)
    assert isinstance(step, RunTools)
    assert [c["id"] for c in step.calls] == ["c1", "c2"]
    state = fold(request(), started(), llm(1, "c1", "c2"), dispatched(1, "c1", "c2"))
    step = next_step(state)
    assert isinstance(step, Wait)
    assert [d.tool_call_id for d in step.on] == ["c1", "c2"]


@pytest.mark.parametrize("order", [("c1", "c2"), ("c2", "c1")])
def test_children_finishing_in_any_order_drive_the_next_model_call(order: tuple[str, str]) -> None:
    base = [request(), started(), llm(1, "c1", "c2"), dispatched(1, "c1", "c2")]
    first, second = order
    assert isinstance(next_step(fold(*base, result(1, first))), Wait)
    state = fold(*base, result(1, first), result(1, second))
    assert next_step(state) == CallModel(turn=2, attempt=1)
    # the tool messages follow the call order, not the order the children finished in
    tools = [m["tool_call_id"] for m in state.messages() if m["role"] == "tool"]
    assert tools == ["c1", "c2"]


def test_a_failing_child_is_a_tool_error_the_model_sees() -> None:
    state = fold(request(), started(), llm(1, "c1"), dispatched(1, "c1"), result(1, "c1", "error"))
    assert next_step(state) == CallModel(turn=2, attempt=1)
    assert state.messages()[-1]["role"] == "tool"


def test_a_late_duplicate_result_changes_nothing() -> None:
    state = fold(
        request(),
        started(),
        llm(1, "c1"),
        dispatched(1, "c1"),
        result(1, "c1"),
        result(1, "c1", "error"),
    )
    assert state.turns[0].results["c1"].status == "success"


def test_an_answer_without_tool_calls_finishes() -> None:
    assert next_step(fold(request(), started(), llm(1, text="done"))) == Finish(turn=1)


def test_a_cancel_mid_turn_stops_the_running_children() -> None:
    state = fold(
        request(),
        started(),
        llm(1, "c1", "c2"),
        dispatched(1, "c1", "c2"),
        result(1, "c1"),
        AgentCancelRequested(reason="cancelled by user"),
    )
    step = next_step(state)
    assert isinstance(step, Cancel)
    assert step.reason == "cancelled by user"
    assert [call["id"] for _, call in step.pending] == ["c2"]
    assert [d.tool_call_id for d in step.dispatched] == ["c2"]


def test_a_cancel_before_the_model_answered_has_nothing_pending() -> None:
    step = next_step(fold(request(), started(), AgentCancelRequested(reason="stop")))
    assert step == Cancel(reason="stop", pending=[], dispatched=[])


def test_finished_is_done_and_later_events_change_nothing() -> None:
    end = AgentFinished(status="success", output={"text": "x"})
    state = fold(request(), started(), llm(1, text="x"), end, AgentCancelRequested(reason="late"))
    assert next_step(state) == Done(end)


def test_model_failures_are_retried_in_the_invocation_with_backoff() -> None:
    base = [request(), started()]
    assert next_step(fold(*base, failed(1, 1, retry_after=1.0))) == CallModel(
        turn=1, attempt=2, delay_s=1.0
    )
    assert next_step(fold(*base, failed(1, 1), failed(1, 2))) == CallModel(
        turn=1, attempt=3, delay_s=backoff_s(2, None)
    )
    state = fold(*base, failed(1, 1), failed(1, 2), failed(1, 3), failed(1, 4))
    assert next_step(state, model_attempts=4) == Fail(error="HTTP 429 try 4", retryable=True)


def test_a_recorded_answer_ends_the_retries_of_its_turn() -> None:
    state = fold(request(), started(), failed(1, 1), failed(1, 2), llm(1, "c1"))
    assert isinstance(next_step(state), RunTools)
    assert state.model_failures == []


def test_a_non_retryable_failure_fails_at_once_or_goes_to_the_fallback() -> None:
    state = fold(request(), started(), failed(1, 1, retryable=False))
    assert next_step(state) == Fail(error="HTTP 429 try 1", retryable=False)
    with_fallback = request(fallbackCredentialId="c2", fallbackModel="m2")
    state = fold(with_fallback, started(), failed(1, 1, retryable=False))
    assert next_step(state) == CallModel(turn=1, attempt=2, fallback=True)
    state = fold(
        with_fallback,
        started(),
        failed(1, 1, retryable=False),
        failed(1, 2, retryable=False, fallback=True),
    )
    step = next_step(state)
    assert isinstance(step, Fail)
    assert "fallback" in step.error


def test_iteration_limit_asks_once_more_without_tools_then_gives_up() -> None:
    base = [
        request(),
        started(max_iterations=1),
        llm(1, "c1"),
        dispatched(1, "c1"),
        result(1, "c1"),
    ]
    assert next_step(fold(*base)) == CallModel(turn=2, attempt=1, grace=True)
    assert next_step(fold(*base, failed(2, 1))) == GraceLimit(turn=2)


def test_retry_after_is_honoured_but_capped() -> None:
    assert backoff_s(1, 2.5) == 2.5
    assert backoff_s(1, 3600) == 60.0
    assert backoff_s(1, None) < backoff_s(3, None) <= 8.0


def test_a_sub_agent_request_is_a_request_too() -> None:
    sub = SubAgentDispatched(
        invocation_id="i2sx",
        parent_invocation_id="i2",
        tool_call_id="c1",
        node_id="d",
        node_label="distanceAgent",
        prompt="how far?",
        depth=1,
    )
    state = fold(sub)
    assert state.is_sub_agent
    assert next_step(state) == Start()
