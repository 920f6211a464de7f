"""The messages a model round is asked with, rebuilt from the record (never kept elsewhere).

System prompt (recorded with the turn), the last 25 messages of earlier turns (text only:
tool results are not carried over, as in Heym), the user's message with its `Date:` line,
then this turn's rounds with their sanitised tool results, recorded compressions applied
where they happened. A restarted runtime rebuilds exactly what it had.
"""

from __future__ import annotations

from typing import Any

from contracts.chat import MAX_HISTORY_MESSAGES, ChatContextCompressed, ChatTurnCompleted
from libs.chat import Conversation, Turn, stored_text
from services.agent_runtime.assistant.domain.results import for_model
from services.agent_runtime.compression import apply_compression, plan_at


def _iso_ms(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def history(conv: Conversation, turn: Turn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for earlier in conv.turns:
        if earlier is turn or earlier.ended is None:
            continue
        date = _iso_ms(earlier.message.posted_at_ms) if earlier.message.posted_at_ms else ""
        out.append({"role": "user", "content": _dated(earlier.message.content, date)})
        end = earlier.ended
        if isinstance(end, ChatTurnCompleted):
            text = stored_text(end.text, end.markers)
        else:
            text = end.partial_text
        if text:
            out.append({"role": "assistant", "content": text})
    return out[-MAX_HISTORY_MESSAGES:]


def _dated(content: str, date: str) -> str:
    return f"{content}\n\nDate: {date}" if date else content


def model_messages(conv: Conversation, turn: Turn) -> list[dict[str, Any]]:
    started = turn.started
    assert started is not None
    messages: list[dict[str, Any]] = [{"role": "system", "content": started.system_prompt}]
    messages += history(conv, turn)
    messages.append({"role": "user", "content": _dated(turn.message.content, started.now_iso)})
    for rnd in turn.rounds:
        if rnd.number in turn.compressions:
            messages = apply_recorded(messages, turn.compressions[rnd.number])
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": rnd.recorded.message.get("content"),
        }
        if rnd.recorded.message.get("tool_calls"):
            assistant["tool_calls"] = rnd.recorded.message["tool_calls"]
        messages.append(assistant)
        for call in rnd.calls:
            if call.finished is not None:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.call_id,
                        "content": for_model(call.finished.result),
                    }
                )
    pending = len(turn.rounds) + 1
    if pending in turn.compressions:
        messages = apply_recorded(messages, turn.compressions[pending])
    return messages


def apply_recorded(
    messages: list[dict[str, Any]], c: ChatContextCompressed
) -> list[dict[str, Any]]:
    """Re-apply a recorded compression exactly (same indices, same summary)."""
    return apply_compression(
        messages, plan_at(messages, c.first_user_index, c.tail_start_index), c.summary
    )
