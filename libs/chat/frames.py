"""What a conversation's events look like to a client: the Chat stream's frames (Heym §12.7.5),
the stored assistant text with its hidden workflow markers, the fallback title.

The same frames feed the Chat SSE stream, MCP progress notifications (a `tool_start` label)
and later A2A status updates, so every surface shows the same steps in the same words.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from contracts.base import Envelope
from contracts.chat import (
    ChatCancelRequested,
    ChatContextCompressed,
    ChatMessagePosted,
    ChatQueuedMessageDeleted,
    ChatQueuedMessageEdited,
    ChatQueuedMessageStarted,
    ChatRoundRecorded,
    ChatToolFinished,
    ChatToolStarted,
    ChatTurnCancelled,
    ChatTurnCompleted,
    ChatTurnFailed,
)
from libs.chat.conversation import Conversation

_ASSISTANT_NS = uuid.UUID("2f1d6e0a-6c2b-4f0e-8d7a-5b3c9e1f4a20")
_MARKER = re.compile(r"\s*<!--\s*heym-workflow-id:[^>]*-->")


def assistant_message_id(turn_id: str) -> str:
    """The id of the assistant message a turn stores (fixed, so a replay names it again)."""
    return str(uuid.uuid5(_ASSISTANT_NS, turn_id))


def workflow_marker(workflow_id: str, name: str) -> str:
    clean = name.replace("-->", "").replace("\n", " ")
    return f"<!-- heym-workflow-id:{workflow_id} heym-workflow-name:{clean} -->"


def stored_text(text: str, markers: list[str]) -> str:
    """The assistant message as stored: the reply and its hidden workflow markers."""
    return "\n\n".join([text, *markers]) if markers else text


def strip_markers(text: str) -> str:
    return _MARKER.sub("", text).strip()


def display_args(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Arguments as a step row shows them: a saved workflow as its size, not its DSL."""
    if name == "save_workflow":
        wf = args.get("workflow")
        if isinstance(wf, dict):
            nodes, edges = wf.get("nodes"), wf.get("edges")
            return {
                "name": wf.get("name"),
                "nodes": len(nodes) if isinstance(nodes, list) else 0,
                "edges": len(edges) if isinstance(edges, list) else 0,
            }
    return args


def queued_message(message: ChatMessagePosted) -> dict[str, Any]:
    return {
        "id": message.message_id,
        "content": message.content,
        "credential_id": message.credential_id or None,
        "model": message.model or None,
        "attachment": _attachment_meta(message.attachment),
        "created_at_ms": message.posted_at_ms,
    }


def _attachment_meta(attachment: dict[str, Any] | None) -> dict[str, Any] | None:
    if not attachment:
        return None
    return {"name": attachment.get("name"), "kind": attachment.get("kind")}


def step(state: Conversation, env: Envelope) -> list[dict[str, Any]]:
    """Fold `env` into `state` and return the frames it produces (in order)."""
    ev = env.event
    before_turns = len([t for t in state.turns if t.ended is not None])
    current = state.current
    open_tools = (
        [c for c in current.calls() if c.started is not None and c.finished is None]
        if current is not None
        else []
    )
    queued_before = list(state.queue)
    state.fold(env)
    frames: list[dict[str, Any]] = []
    if isinstance(ev, ChatMessagePosted):
        if ev.message_id in state.queue:
            frames.append({"type": "queued_message_created", "queued_message": queued_message(ev)})
    elif isinstance(ev, ChatQueuedMessageStarted):
        frames.append({"type": "queued_message_started", "message_id": ev.message_id})
    elif isinstance(ev, ChatQueuedMessageEdited):
        if ev.message_id in state.queue:
            frames.append(
                {
                    "type": "queued_message_updated",
                    "queued_message": queued_message(state.messages[ev.message_id]),
                }
            )
    elif isinstance(ev, ChatQueuedMessageDeleted):
        if ev.message_id in queued_before:
            frames.append({"type": "queued_message_deleted", "message_id": ev.message_id})
    elif isinstance(ev, ChatCancelRequested):
        if queued_before and not state.queue:
            frames.append({"type": "queue_cleared"})
    elif isinstance(ev, ChatRoundRecorded):
        frames.append(
            {
                "type": "context",
                "round": ev.round,
                "prompt_tokens": ev.usage.get("prompt_tokens", ev.context_tokens),
                "estimated_tokens": ev.context_tokens,
                "context_limit": ev.context_limit,
            }
        )
    elif isinstance(ev, ChatToolStarted):
        frames.append(
            {
                "type": "tool_start",
                "id": ev.tool_call_id,
                "name": ev.name,
                "label": ev.label,
                "args": display_args(ev.name, ev.args),
            }
        )
    elif isinstance(ev, ChatToolFinished):
        frames.append(tool_end(ev))
        frames.extend(dict(n) for n in ev.notices)
    elif isinstance(ev, ChatContextCompressed):
        frames.append(
            {
                "type": "compressed",
                "messages_compressed": ev.messages_compressed,
                "tokens_before": ev.tokens_before,
                "tokens_after": ev.tokens_after,
                "elapsed_ms": ev.elapsed_ms,
            }
        )
    elif isinstance(ev, ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled):
        frames.extend(_turn_end(state, ev, open_tools, first=before_turns == 0))
    return frames


def tool_end(ev: ChatToolFinished) -> dict[str, Any]:
    return {
        "type": "tool_end",
        "id": ev.tool_call_id,
        "name": ev.name,
        "response_summary": ev.response_summary,
        "elapsed_ms": ev.elapsed_ms,
        "status": ev.status,
    }


def _turn_end(
    state: Conversation,
    ev: ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled,
    open_tools: list[Any],
    *,
    first: bool,
) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    done: dict[str, Any] = {
        "type": "assistant_done",
        "message_id": assistant_message_id(ev.turn_id),
        "turn_id": ev.turn_id,
        "paused_for_clarification": False,
    }
    if isinstance(ev, ChatTurnCompleted):
        frames.append({"type": "content", "text": ev.text})
        done["paused_for_clarification"] = ev.paused_for_clarification
        if ev.verified is not None:
            done["verified"] = True
    elif isinstance(ev, ChatTurnFailed):
        frames.append({"type": "error", "text": ev.error})
        done["error"] = ev.error
    else:
        for call in open_tools:
            frames.append(
                {
                    "type": "tool_end",
                    "id": call.call_id,
                    "name": call.name,
                    "response_summary": "Cancelled",
                    "elapsed_ms": 0.0,
                    "status": "cancelled",
                }
            )
        done["cancelled"] = True
    if first:
        frames.append({"type": "title", "title": state.title})
    frames.append(done)
    return frames
