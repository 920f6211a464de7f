"""Reading conversations from the chat read models (projected by the agent runtime)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

import asyncpg

from libs.chat import Conversation

_CONV = """id, title, source, server_id, is_pinned, is_running, has_unread, running_turn_id,
           last_credential_id, last_model, queue_paused_by_message_id, created_at, updated_at"""


def _conv(r: Any) -> dict[str, Any]:
    return {
        "id": r["id"],
        "title": r["title"],
        "source": r["source"],
        "server_id": r["server_id"],
        "is_pinned": r["is_pinned"],
        "is_running": r["is_running"],
        "has_unread": r["has_unread"],
        "running_turn_id": r["running_turn_id"],
        "last_credential_id": r["last_credential_id"],
        "last_model": r["last_model"],
        "queue_paused_by_message_id": r["queue_paused_by_message_id"],
        "created_at": r["created_at"].isoformat(),
        "updated_at": r["updated_at"].isoformat(),
    }


def conversation_json(conv: Conversation) -> dict[str, Any]:
    """A conversation as its own log tells it (before the read model has it)."""
    current = conv.current
    return {
        "id": conv.conversation_id,
        "title": conv.title,
        "source": conv.source,
        "server_id": conv.created.server_id if conv.created else None,
        "is_pinned": conv.is_pinned,
        "is_running": current is not None,
        "has_unread": conv.has_unread,
        "running_turn_id": current.turn_id if current else None,
        "queue_paused_by_message_id": conv.paused_by,
        "messages": [],
        "queue": [],
    }


async def list_conversations(pool: asyncpg.Pool[Any], owner_id: str) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        f"""SELECT {_CONV} FROM chat_conversations WHERE owner_id = $1 AND NOT deleted
            ORDER BY is_pinned DESC, updated_at DESC LIMIT 500""",
        uuid.UUID(owner_id),
    )
    return [_conv(r) for r in rows]


async def conversation_detail(
    pool: asyncpg.Pool[Any], conversation_id: str, owner_id: str
) -> dict[str, Any] | None:
    r = await pool.fetchrow(
        f"SELECT {_CONV} FROM chat_conversations WHERE id = $1 AND owner_id = $2 AND NOT deleted",
        conversation_id,
        uuid.UUID(owner_id),
    )
    if r is None:
        return None
    messages = await pool.fetch(
        """SELECT id, role, content, status, created_at FROM chat_messages
           WHERE conversation_id = $1 ORDER BY sequence""",
        conversation_id,
    )
    tools = await pool.fetch(
        """SELECT t.turn_id, t.id, t.name, t.label, t.args, t.status, t.response_summary,
                  t.elapsed_ms
           FROM chat_tool_calls t WHERE t.conversation_id = $1 ORDER BY t.sequence""",
        conversation_id,
    )
    queue = await pool.fetch(
        """SELECT id, content, credential_id, model, attachment, created_at FROM chat_queue_items
           WHERE conversation_id = $1 ORDER BY created_at, id""",
        conversation_id,
    )
    by_turn: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in tools:
        by_turn[t["turn_id"]].append(
            {
                "id": t["id"],
                "name": t["name"],
                "label": t["label"],
                "args": t["args"],
                "status": t["status"],
                "response_summary": t["response_summary"],
                "elapsed_ms": t["elapsed_ms"],
            }
        )
    out = _conv(r)
    turn_of: dict[str, str] = {}
    listed = []
    last_user = ""
    for m in messages:
        if m["role"] == "user":
            last_user = m["id"]
        turn_of[m["id"]] = last_user
        listed.append(
            {
                "id": m["id"],
                "role": m["role"],
                "content": m["content"],
                "status": m["status"],
                "tool_calls": by_turn.get(last_user, []) if m["role"] == "assistant" else [],
                "created_at": m["created_at"].isoformat(),
            }
        )
    out["messages"] = listed
    out["queue"] = [
        {
            "id": q["id"],
            "content": q["content"],
            "credential_id": q["credential_id"],
            "model": q["model"],
            "attachment": q["attachment"],
            "created_at": q["created_at"].isoformat(),
        }
        for q in queue
    ]
    return out
