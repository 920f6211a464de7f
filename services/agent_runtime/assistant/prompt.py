"""Preparing a turn: read what the prompt needs (the user's workflows and credentials, the
build target) and record the assembled prompt (`ChatTurnStarted`), once per turn."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg

from contracts.chat import ChatTurnStarted
from libs.chat import Conversation, Turn
from libs.workflow import store
from services.agent_runtime.assistant.domain.build import offered
from services.agent_runtime.assistant.prompt_text import system_prompt
from services.agent_runtime.assistant.tools.workflows import light


def _now_iso(timezone: str) -> str:
    try:
        zone: Any = ZoneInfo(timezone)
    except Exception:
        zone = UTC
    return datetime.now(zone).isoformat(timespec="seconds")


async def prepare_turn(pool: asyncpg.Pool[Any], conv: Conversation, turn: Turn) -> ChatTurnStarted:
    message = turn.message
    rows = await store.list_workflows(pool, conv.owner_id)
    credentials: list[dict[str, Any]] | None = None
    if message.credential_mode in ("ask_and_create", "ask_via_link"):
        creds = await pool.fetch(
            "SELECT id, name, type FROM credentials WHERE owner_id = $1 ORDER BY name",
            uuid.UUID(conv.owner_id),
        )
        credentials = [{"id": str(r["id"]), "name": r["name"], "type": r["type"]} for r in creds]
    target: dict[str, Any] | None = None
    if message.build is not None and message.build.target_workflow_id:
        row = await store.get_workflow(pool, message.build.target_workflow_id)
        if row is not None and row.owner_id == conv.owner_id:
            target = {
                "id": row.id,
                "name": row.name,
                "description": row.description,
                "nodes": row.nodes,
                "edges": row.edges,
            }
    prompt = system_prompt(
        workflows=[light(r) for r in rows][:200],
        credentials=credentials,
        attachment=message.attachment,
        build=message.build is not None,
        target=target,
    )
    return ChatTurnStarted(
        turn_id=turn.turn_id,
        system_prompt=prompt,
        tools=[t.name for t in offered(turn)],
        model=message.model,
        credential_id=message.credential_id,
        now_iso=_now_iso(message.timezone or "UTC"),
        started_at_ms=int(time.time() * 1000),
    )
