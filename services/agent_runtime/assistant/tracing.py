"""The Heym Agent's spans: each chat turn is a trace of its own, `heym.assistant.turn` (GenAI
`invoke_agent`), with a `chat <model>` span per model round and a `heym.agent.tool.execute`
span per tool call; a workflow the assistant runs is a child of the tool call that started
it. Written after the conversation's own appends (expected sequence: once each); ids derived
from the conversation, turn, round and tool call, as for workflow runs (`libs.telemetry`)."""

from __future__ import annotations

import json

from contracts.agents import LlmCallRecorded, ToolCallRecorded
from contracts.chat import (
    ChatRoundRecorded,
    ChatToolFinished,
    ChatTurnCancelled,
    ChatTurnCompleted,
    ChatTurnFailed,
)
from libs import telemetry
from libs.chat.conversation import Conversation, Turn
from libs.telemetry import TraceContext
from libs.telemetry.spans import emit, ms_ns

TURN_SPAN = "heym.assistant.turn"
_STATUSES = {"success", "error", "pending", "timeout", "cancelled"}


def turn_trace(conversation_id: str, turn_id: str) -> TraceContext | None:
    """The turn's root context: a trace of its own, sampled by the ratio sampler."""
    return telemetry.new_run_context(f"chat:{conversation_id}:{turn_id}", None)


def tool_trace(conversation_id: str, turn_id: str, tool_call_id: str) -> TraceContext | None:
    turn = turn_trace(conversation_id, turn_id)
    return telemetry.tool_context(turn, conversation_id, turn_id, tool_call_id)


def recorded(conv: Conversation, events: list[object], *, at_ms: int) -> None:
    """Spans for events the conversation just appended (and folded)."""
    if not telemetry.current().enabled:
        return
    cid = conv.conversation_id
    for event in events:
        turn_id = getattr(event, "turn_id", None)
        turn = conv.turn(turn_id) if isinstance(turn_id, str) else None
        if turn is None:
            continue
        root = turn_trace(cid, turn.turn_id)
        if isinstance(event, ChatRoundRecorded):
            ctx = None
            if root is not None:
                ctx = root.child(telemetry.chat_span_id(cid, turn.turn_id, event.round, 1))
            telemetry.chat_span(_as_llm(event), ctx, root, end_ms=at_ms, model=event.model)
        elif isinstance(event, ChatToolFinished):
            _tool(cid, turn, event, root)
        elif isinstance(event, ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled):
            _turn(cid, turn, event, root)


def _tool(cid: str, turn: Turn, done: ChatToolFinished, root: TraceContext | None) -> None:
    call = turn.call(done.tool_call_id)
    started = call.started if call is not None else None
    begin = started.started_at_ms if started is not None else done.finished_at_ms
    record = ToolCallRecorded(
        turn=started.round if started is not None else 0,
        tool_call_id=done.tool_call_id,
        name=done.name,
        source="assistant",
        arguments=json.dumps(started.args if started is not None else {}, default=str),
        result=done.result,
        status=done.status if done.status in _STATUSES else "success",  # type: ignore[arg-type]
        started_at_ms=begin,
        finished_at_ms=done.finished_at_ms or begin,
        elapsed_ms=done.elapsed_ms,
    )
    ctx = telemetry.tool_context(root, cid, turn.turn_id, done.tool_call_id)
    telemetry.tool_span(record, ctx, root)


def _turn(
    cid: str,
    turn: Turn,
    end: ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled,
    root: TraceContext | None,
) -> None:
    started = turn.started
    begin = started.started_at_ms if started is not None else end.finished_at_ms
    model = started.model if started is not None else ""
    prompt = sum(int(r.recorded.usage.get("prompt_tokens", 0)) for r in turn.rounds)
    completion = sum(int(r.recorded.usage.get("completion_tokens", 0)) for r in turn.rounds)
    status = {
        ChatTurnCompleted: "success",
        ChatTurnFailed: "error",
        ChatTurnCancelled: "cancelled",
    }[type(end)]
    emit(
        TURN_SPAN,
        root,
        None,
        start_ns=ms_ns(begin),
        end_ns=ms_ns(end.finished_at_ms or begin),
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Heym Agent",
            "gen_ai.request.model": model or None,
            "gen_ai.usage.input_tokens": prompt,
            "gen_ai.usage.output_tokens": completion,
            "gen_ai.conversation.id": cid,
            "heym.chat.turn_id": turn.turn_id,
            "heym.chat.rounds": len(turn.rounds),
            "heym.chat.status": status,
        },
        error=end.error if isinstance(end, ChatTurnFailed) else None,
    )


def _as_llm(event: ChatRoundRecorded) -> LlmCallRecorded:
    return LlmCallRecorded(
        turn=event.round,
        model=event.model,
        message=event.message,
        finish_reason=event.finish_reason,
        usage=event.usage,
        elapsed_ms=event.elapsed_ms,
    )
