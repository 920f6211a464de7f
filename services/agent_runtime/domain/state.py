"""`AgentState`: one agent invocation as a fold of its own events (`evolve`), nothing else.

The conversation sent to the model is rebuilt from the record: the prepared messages, then per
turn the assistant message and its tool results in call order, with recorded compressions
applied where they happened. So a runtime that restarts, or another replica, rebuilds exactly
what the first one had.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, assert_never

from contracts.agents import (
    AgentCancelRequested,
    AgentFinished,
    AgentNudged,
    AgentRequested,
    AgentStarted,
    ContextCompressed,
    DispatchedCall,
    GuardrailChecked,
    LlmCallRecorded,
    ModelCallFailed,
    NodeToolDispatched,
    SubAgentDispatched,
    ToolCallRecorded,
    ToolCallsDispatched,
)
from contracts.base import Event, UnknownEvent
from contracts.memory import MEMORY_EVENTS, MEMORY_WORK_EVENTS
from contracts.nodes import NODE_EVENTS, NodeAttemptFailed, NodeCompleted
from contracts.review import (
    ChildPaused,
    ReviewClosed,
    ReviewDecided,
    ReviewExpired,
    ReviewExpiryDue,
    ReviewOpened,
    ReviewRequested,
)
from contracts.runs import RUN_LIFECYCLE_EVENTS
from contracts.tools import SANDBOX_TOOL_EVENTS
from services.agent_runtime.domain.compression_plan import apply_compression, plan_at
from services.agent_runtime.domain.review import decision_record

Request = AgentRequested | SubAgentDispatched


@dataclass
class Turn:
    llm: LlmCallRecorded
    results: dict[str, ToolCallRecorded] = field(default_factory=dict)
    dispatched: dict[str, DispatchedCall] = field(default_factory=dict)
    dispatched_at_ms: int = 0

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.llm.message.get("tool_calls") or [])

    def missing(self) -> list[dict[str, Any]]:
        """Tool calls of this turn without a recorded result."""
        return [c for c in self.tool_calls if call_id(c) not in self.results]

    def undispatched(self) -> list[dict[str, Any]]:
        """Tool calls with no result that nobody is working on yet."""
        return [c for c in self.missing() if call_id(c) not in self.dispatched]

    @property
    def final(self) -> bool:
        return self.llm.grace or not self.tool_calls


@dataclass
class Review:
    """One `request_human_review` of this invocation and what became of it."""

    requested: ReviewRequested
    sequence: int
    opened: ReviewOpened | None = None
    decided: ReviewDecided | None = None
    expired: ReviewExpired | None = None


@dataclass
class AgentState:
    request: Request | None = None
    requested_at_ms: int = 0
    traceparent: str | None = None
    started: AgentStarted | None = None
    # The guardrail check of the user message, when the node has guardrails on.
    guardrail: GuardrailChecked | None = None
    turns: list[Turn] = field(default_factory=list)
    compressions: dict[int, ContextCompressed] = field(default_factory=dict)
    # Failed model requests of the turn being asked (cleared when the turn is recorded).
    model_failures: list[ModelCallFailed] = field(default_factory=list)
    cancel: AgentCancelRequested | None = None
    finished: AgentFinished | None = None
    # A result written by an earlier build on the invocation's own subject.
    legacy_result: NodeCompleted | NodeAttemptFailed | None = None
    nudged: int = 0
    last_seq: int = 0
    # Human reviews this invocation asked for (by request id, in order), and the children
    # (sub-agents, sub-workflow runs) that reported a pause for a review further down.
    reviews: dict[str, Review] = field(default_factory=dict)
    child_pauses: dict[str, ChildPaused] = field(default_factory=dict)

    @property
    def is_sub_agent(self) -> bool:
        return isinstance(self.request, SubAgentDispatched)

    @property
    def node_type(self) -> str:
        if isinstance(self.request, AgentRequested):
            return self.request.node_type
        return "agent"

    @property
    def data(self) -> dict[str, Any]:
        raw = self.request.node.get("data") if self.request is not None else None
        return dict(raw) if isinstance(raw, dict) else {}

    @property
    def model_turns(self) -> int:
        return sum(1 for t in self.turns if not t.llm.grace)

    @property
    def current_turn(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def turn_of(self, tool_call_id: str, hint: int = 0) -> Turn | None:
        if 0 < hint <= len(self.turns):
            turn = self.turns[hint - 1]
            if any(call_id(c) == tool_call_id for c in turn.tool_calls):
                return turn
        for turn in reversed(self.turns):
            if any(call_id(c) == tool_call_id for c in turn.tool_calls):
                return turn
        return None

    def open_review(self) -> Review | None:
        """The review this invocation waits for: asked for, its call not answered yet."""
        for review in reversed(self.reviews.values()):
            r = review.requested
            turn = self.turns[r.turn - 1] if 0 < r.turn <= len(self.turns) else None
            if turn is None or r.tool_call_id in turn.results:
                continue
            sent = turn.dispatched.get(r.tool_call_id)
            if sent is not None and sent.source != "hitl":
                continue  # an approved MCP call, running in the sandbox now
            return review
        return None

    def child_pause(self, turn: Turn) -> ChildPaused | None:
        """The latest pause reported by a child this turn still waits for."""
        found = [
            p
            for c in turn.missing()
            if (p := self.child_pauses.get(call_id(c))) is not None
            and p.turn in (0, len(self.turns))
        ]
        return found[-1] if found else None

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as the model saw it before the next call."""
        assert self.started is not None
        messages = [dict(m) for m in self.started.messages]
        for number, turn in enumerate(self.turns, start=1):
            if number in self.compressions:
                messages = apply_recorded(messages, self.compressions[number])
            messages.append(_assistant(turn.llm.message))
            for call in turn.tool_calls:
                result = turn.results.get(call_id(call))
                if result is not None:
                    messages.append(tool_message(result))
        pending = len(self.turns) + 1
        if pending in self.compressions:
            messages = apply_recorded(messages, self.compressions[pending])
        return messages


def evolve(
    state: AgentState,
    event: Event | UnknownEvent,
    sequence: int,
    *,
    at_ms: int = 0,
    traceparent: str | None = None,
) -> None:
    """Apply one recorded event (`at_ms` and `traceparent`: its envelope's, kept for the
    request, whose clock and trace every later step inherits)."""
    if sequence > state.last_seq:
        state.last_seq = sequence
    if isinstance(event, UnknownEvent):
        return
    if isinstance(event, AgentRequested | SubAgentDispatched):
        if state.request is None:  # the first request wins; a re-sent one changes nothing
            state.request = event
            state.requested_at_ms = at_ms
            state.traceparent = traceparent
    elif isinstance(event, AgentStarted):
        if state.started is None:
            state.started = event
    elif isinstance(event, GuardrailChecked):
        if state.guardrail is None:  # classified once: a replay never asks again
            state.guardrail = event
    elif isinstance(event, LlmCallRecorded):
        if event.turn == len(state.turns) + 1:
            state.turns.append(Turn(llm=event))
            state.model_failures = []
    elif isinstance(event, ModelCallFailed):
        if event.turn == len(state.turns) + 1:
            state.model_failures.append(event)
    elif isinstance(event, ToolCallsDispatched):
        turn = state.turns[event.turn - 1] if 0 < event.turn <= len(state.turns) else None
        if turn is not None:
            turn.dispatched_at_ms = turn.dispatched_at_ms or event.dispatched_at_ms
            for call in event.calls:
                held = turn.dispatched.get(call.tool_call_id)
                if held is not None and held.source == "hitl" and call.source != "hitl":
                    turn.dispatched[call.tool_call_id] = call  # an approved call goes out
                else:
                    turn.dispatched.setdefault(call.tool_call_id, call)
    elif isinstance(event, ToolCallRecorded):
        found = state.turn_of(event.tool_call_id, event.turn)
        if found is not None and state.finished is None:
            # The first result of a call wins: a child's late duplicate changes nothing.
            found.results.setdefault(event.tool_call_id, event)
    elif isinstance(event, ContextCompressed):
        state.compressions.setdefault(event.turn, event)
    elif isinstance(event, AgentCancelRequested):
        if state.cancel is None:
            state.cancel = event
    elif isinstance(event, AgentNudged):
        state.nudged += 1
    elif isinstance(event, AgentFinished):
        if state.finished is None:
            state.finished = event
    elif isinstance(event, NodeCompleted | NodeAttemptFailed):
        state.legacy_result = event
    elif isinstance(event, ReviewRequested | ReviewOpened | ReviewDecided | ReviewExpired):
        _review(state, event, sequence)
    elif isinstance(event, ChildPaused):
        # A later pause of the same child (its next checkpoint) replaces the earlier one.
        state.child_pauses[event.tool_call_id] = event
    elif isinstance(event, ReviewExpiryDue | ReviewClosed):
        return  # the review service's own work item, never an agent's subject
    elif isinstance(event, NodeToolDispatched):
        return  # an earlier build's canvas tool dispatch; its result arrives as a record
    elif isinstance(
        event,
        (
            *RUN_LIFECYCLE_EVENTS,
            *NODE_EVENTS,
            *SANDBOX_TOOL_EVENTS,
            *MEMORY_EVENTS,
            *MEMORY_WORK_EVENTS,
        ),
    ):
        return  # other aggregates' events never belong to an agent's subject
    else:  # pragma: no cover - the catalogue and this fold must grow together
        assert_never(event)  # type: ignore[arg-type]


def _review(
    state: AgentState,
    event: ReviewRequested | ReviewOpened | ReviewDecided | ReviewExpired,
    sequence: int,
) -> None:
    if isinstance(event, ReviewRequested):
        state.reviews.setdefault(event.request_id, Review(requested=event, sequence=sequence))
        return
    review = state.reviews.get(event.request_id)
    if review is None:
        return
    if isinstance(event, ReviewOpened):
        review.opened = review.opened or event
    elif review.decided is None and review.expired is None:
        # The first end wins (the writers' expected sequences already make it the only one).
        if isinstance(event, ReviewDecided):
            review.decided = event
            r = review.requested
            turn = state.turns[r.turn - 1] if 0 < r.turn <= len(state.turns) else None
            if (
                event.decision != "refused"
                and r.tool_source == "hitl"
                and turn is not None
                and state.finished is None
            ):
                # The decision answers the review call (refused: the invocation ends instead;
                # an approved MCP call is dispatched by the `ApplyDecision` step).
                turn.results.setdefault(r.tool_call_id, decision_record(review))
        else:
            review.expired = event


def call_id(tool_call: dict[str, Any]) -> str:
    """A tool call's id as recorded (a model may omit it: the empty id is an id too)."""
    return str(tool_call.get("id") or "")


def tool_name(tool_call: dict[str, Any]) -> str:
    function = tool_call.get("function")
    return str(function.get("name", "")) if isinstance(function, dict) else ""


def tool_message(result: ToolCallRecorded) -> dict[str, Any]:
    content = (
        result.result if isinstance(result.result, str) else json.dumps(result.result, default=str)
    )
    return {"role": "tool", "tool_call_id": result.tool_call_id, "content": content}


def _assistant(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def apply_recorded(messages: list[dict[str, Any]], c: ContextCompressed) -> list[dict[str, Any]]:
    """Re-apply a recorded compression exactly as it was made (same indices, same summary)."""
    plan = plan_at(messages, c.first_user_index, c.tail_start_index)
    return apply_compression(messages, plan, c.summary)
