"""Recorded agent invocations replay against the current agent decider.

For every agent aggregate in a recording (`heym.agent.RUN.<invocation>`: orchestrators,
sub-agents, agents with compression, tool failures, model retries, sub-workflow tools), the
invocation's events are folded in order and, before each step the runtime recorded, today's
`next_step` must pick that step; the tool calls a recorded answer handled at once must get
the same results and the ones it handed to children the same targets; a recorded guardrail
check must come from a `Classify` step; a recorded output must be rebuilt identically from the
fold, and so must a recorded memory extraction request. Events written by others (the request,
a child's result, a cancel, a nudge, a review opened or decided, a child's pause) are folded
without a check. A human review replays too: the turn that asked for it must ask for the same
review, and the decision must be applied at the same point (`ApplyDecision`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts.agents import (
    AgentCancelRequested,
    AgentFinished,
    AgentNudged,
    AgentRequested,
    AgentStarted,
    ContextCompressed,
    GuardrailChecked,
    LlmCallRecorded,
    ModelCallFailed,
    SubAgentDispatched,
    ToolCallRecorded,
    ToolCallsDispatched,
)
from contracts.memory import MemoryExtractionRequested
from contracts.review import (
    ChildPaused,
    ReviewDecided,
    ReviewExpired,
    ReviewOpened,
    ReviewRequested,
)
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import (
    AgentState,
    ApplyDecision,
    CallModel,
    Cancel,
    Classify,
    Fail,
    Finish,
    GraceLimit,
    RunTools,
    Start,
    Step,
    evolve,
    next_step,
)
from services.agent_runtime.memory.request import extraction_request
from services.agent_runtime.steps.ending import _output
from services.agent_runtime.tools.plan import plan_tools
from services.agent_runtime.tools.review import review_plan
from services.agent_runtime.tools.spec import ToolSpec
from tests.replay.recordings import RECORDED, Message, load

pytestmark = pytest.mark.replay

AGENT_RECORDINGS = [p for p in RECORDED if any(m.aggregate == "agent" for m in load(p).messages)]


def _external(message: Message, state: AgentState) -> bool:
    """Written by someone else than the invocation's own steps."""
    events = message.events
    if any(isinstance(e, AgentRequested | SubAgentDispatched) for e in events):
        return True
    if all(isinstance(e, AgentCancelRequested | AgentNudged) for e in events):
        return True
    if all(
        isinstance(e, ReviewOpened | ReviewDecided | ReviewExpired | ChildPaused) for e in events
    ):
        return True  # the review service, a reviewer, a paused child
    turn = state.current_turn
    return (
        len(events) == 1
        and isinstance(events[0], ToolCallRecorded)
        and turn is not None
        and events[0].tool_call_id in turn.dispatched
    )


def _expected(message: Message, state: AgentState) -> type[Step] | tuple[type[Step], ...]:
    first = message.events[0]
    review = state.open_review()
    if (
        isinstance(first, ToolCallRecorded)
        and review is not None
        and review.requested.tool_call_id == first.tool_call_id
    ):
        return ApplyDecision
    if isinstance(first, AgentStarted):
        return Start
    if isinstance(first, GuardrailChecked):
        return Classify
    if isinstance(first, ModelCallFailed | ContextCompressed):
        return CallModel
    if isinstance(first, LlmCallRecorded):
        return (CallModel, GraceLimit) if first.grace else CallModel
    if isinstance(first, ToolCallRecorded | ToolCallsDispatched):
        return RunTools
    if isinstance(first, AgentFinished):
        return {"success": Finish, "error": Fail, "cancelled": Cancel}[first.status]
    raise AssertionError(f"no step writes {type(first).__name__} first")


def _call(run_id: str, state: AgentState) -> AgentCall:
    assert state.request is not None
    return AgentCall.from_request(
        run_id, state.request, requested_at_ms=state.requested_at_ms, traceparent=None
    )


def _check_answer(run_id: str, state: AgentState, message: Message) -> None:
    """The calls a recorded answer handled at once get the same results today, and the ones
    it handed to children the same targets."""
    llm = message.events[0]
    assert isinstance(llm, LlmCallRecorded)
    calls = list(llm.message.get("tool_calls") or [])
    if not calls or llm.grace:
        return
    assert state.started is not None
    specs = {t["name"]: ToolSpec(**t) for t in state.started.tools}
    dispatched_at = next(
        (e.dispatched_at_ms for e in message.events if isinstance(e, ToolCallsDispatched)), 0
    )
    plan = plan_tools(
        _call(run_id, state),
        llm.turn,
        calls,
        specs,
        now_ms=dispatched_at,
        review=review_plan(state),
    )
    recorded = [e for e in message.events[1:] if isinstance(e, ToolCallRecorded)]
    assert [(r.tool_call_id, r.status, r.result) for r in plan.results] == [
        (r.tool_call_id, r.status, r.result) for r in recorded
    ]
    handed = [c for e in message.events if isinstance(e, ToolCallsDispatched) for c in e.calls]
    assert [msgspec.to_builtins(c) for c in plan.waiting] == [
        msgspec.to_builtins(c) for c in handed
    ]
    asked = [e for e in message.events if isinstance(e, ReviewRequested)]
    assert [_review(r) for r in plan.reviews] == [_review(r) for r in asked]


def _review(requested: ReviewRequested) -> dict[str, Any]:
    data = msgspec.to_builtins(requested)
    data.pop("requested_at_ms")
    for entry in data["hitl_history"]:
        entry.pop("decidedAt", None)
    return dict(data)


def _check_output(run_id: str, state: AgentState, message: Message) -> None:
    end = message.events[0]
    assert isinstance(end, AgentFinished)
    turn = state.current_turn
    assert turn is not None
    ctx: Any = type("Ctx", (), {"state": state, "call": _call(run_id, state)})()
    ctx.data = ctx.call.data
    rebuilt = _output(ctx, turn.llm)
    assert comparable_output(rebuilt) == comparable_output(end.output)


def comparable_output(output: Any) -> Any:
    data = msgspec.json.decode(msgspec.json.encode(output))
    if isinstance(data, dict):
        data.pop("tokens_per_sec", None)
    return data


@pytest.mark.parametrize("path", AGENT_RECORDINGS, ids=[p.stem for p in AGENT_RECORDINGS])
def test_recorded_agents_replay_to_the_same_steps(path: Path) -> None:
    recording = load(path)
    run_id = recording.run_id or "RUN"
    by_invocation: dict[str, list[Message]] = defaultdict(list)
    for message in recording.messages:
        if message.aggregate == "agent":
            by_invocation[message.subject].append(message)
    assert by_invocation
    for subject, messages in by_invocation.items():
        state = AgentState()
        checked = 0
        for message in messages:
            if not _external(message, state):
                step = next_step(state, model_attempts=100)
                expected = _expected(message, state)
                assert isinstance(step, expected), (subject, message.sequence, step)
                if isinstance(step, CallModel):
                    first = message.events[0]
                    if isinstance(first, LlmCallRecorded | ModelCallFailed):
                        assert (step.turn, step.attempt) == (first.turn, first.attempt)
                if isinstance(message.events[0], LlmCallRecorded):
                    _check_answer(run_id, state, message)
                if isinstance(step, Finish):
                    _check_output(run_id, state, message)
                checked += 1
            for event in message.events:
                evolve(state, event, message.sequence, at_ms=message.recorded_at_ms)
        assert checked >= 2, subject
        assert state.finished is not None, f"{subject} never finished"


MEMORY_RECORDINGS = [
    p
    for p in RECORDED
    if any(isinstance(e, MemoryExtractionRequested) for m in load(p).messages for e in m.events)
]


@pytest.mark.parametrize("path", MEMORY_RECORDINGS, ids=[p.stem for p in MEMORY_RECORDINGS])
def test_recorded_extraction_requests_are_rebuilt_from_the_invocation(path: Path) -> None:
    """The memory extraction an agent left behind follows from its own events alone (the
    graphs it may write were recorded in `agent.started`), so a replay asks for the same."""
    recording = load(path)
    run_id = recording.run_id or "RUN"
    requests = [
        e for m in recording.messages for e in m.events if isinstance(e, MemoryExtractionRequested)
    ]
    for recorded in requests:
        state = AgentState()
        for message in recording.messages:
            if message.aggregate == "agent" and message.subject.endswith(
                f".{recorded.invocation_id}"
            ):
                for event in message.events:
                    evolve(state, event, message.sequence, at_ms=message.recorded_at_ms)
        rebuilt = extraction_request(_call(run_id, state), state)
        assert rebuilt is not None
        assert recording.comparable(rebuilt) == recording.comparable(recorded)
