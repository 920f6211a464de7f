"""The agent runtime's spans, written after the invocation's own appends (expected sequence:
once each): a `chat` span per model request, the `heym.agent.tool.execute` spans of a turn
once the next answer (or the end) is recorded, since by then every call of the turn has its
result whichever child recorded it, and the invocation's `heym.node.execute` span when its
result is delivered. All under the invocation's span, whose id is derived from run and
invocation, so a resumed or re-driven invocation on another replica writes the same tree."""

from __future__ import annotations

from contracts.agents import AgentFinished, LlmCallRecorded, ModelCallFailed
from contracts.base import Event
from contracts.nodes import NodeAttemptFailed, NodeCompleted
from libs import telemetry
from libs.telemetry import ModelUsage, TraceContext
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import AgentState, Turn, call_id
from services.agent_runtime.domain.state import tool_name

_OPERATION = {"agent": "invoke_agent", "llm": "chat"}


def recorded(call: AgentCall, state: AgentState, events: list[Event], *, at_ms: int) -> None:
    """Spans for events this invocation just appended (and folded into `state`)."""
    if not telemetry.current().enabled:
        return
    agent = call.trace
    for event in events:
        if isinstance(event, LlmCallRecorded | ModelCallFailed):
            ctx = None
            if agent is not None:
                ctx = agent.child(
                    telemetry.chat_span_id(
                        call.run_id, call.invocation_id, event.turn, event.attempt
                    )
                )
            telemetry.chat_span(event, ctx, agent, end_ms=at_ms, model=_model(call))
            if isinstance(event, LlmCallRecorded) and event.turn >= 2:
                _tool_spans(call, agent, state.turns[event.turn - 2])
        elif isinstance(event, AgentFinished) and state.turns:
            _tool_spans(call, agent, state.turns[-1])


def _tool_spans(call: AgentCall, agent: TraceContext | None, turn: Turn) -> None:
    for tool_call in turn.tool_calls:
        cid = call_id(tool_call)
        result = turn.results.get(cid)
        if result is None:
            continue
        function = tool_call.get("function")
        raw = function.get("arguments") if isinstance(function, dict) else None
        telemetry.tool_span(
            result,
            telemetry.tool_context(agent, call.run_id, call.invocation_id, cid),
            agent,
            arguments=raw if isinstance(raw, str) else (result.arguments or tool_name(tool_call)),
        )


def node_done(
    call: AgentCall, state: AgentState, result: NodeCompleted | NodeAttemptFailed
) -> None:
    """The invocation's node span, once its result is recorded (a sub-agent's hangs under
    the orchestrator's tool call, the span its request named)."""
    if not telemetry.current().enabled:
        return
    parent = TraceContext.parse(call.parent_traceparent)
    telemetry.node_span(
        call.run_id,
        result,
        call.trace,
        parent_span_id=parent.span_id if parent is not None else None,
        start_ms=state.requested_at_ms or None,
        usage=_usage(call, state),
        inputs=call.inputs,
        operation=_OPERATION.get(call.node_type),
    )


def _usage(call: AgentCall, state: AgentState) -> ModelUsage:
    prompt = completion = total = 0
    for turn in state.turns:
        usage = turn.llm.usage
        prompt += int(usage.get("prompt_tokens", 0))
        completion += int(usage.get("completion_tokens", 0))
        total += int(usage.get("total_tokens", 0))
    model = state.turns[-1].llm.model if state.turns else _model(call)
    return ModelUsage(model, prompt, completion, total or prompt + completion)


def _model(call: AgentCall) -> str:
    return str(call.data.get("model") or "")
