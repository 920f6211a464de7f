"""Reading the task store (`a2a_tasks`, projected by `projection.py`) and the A2A switches.

`caught_up` gives read-your-writes: it waits (bounded) until the projection has applied
every chat event appended before the call, on whichever gateway replica runs it.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from contracts import subjects
from libs.a2a import wire
from libs.eventlog import EventLog
from services.gateway.a2a.projection import NAME
from services.gateway.mcp.catalog import ChatSurface
from services.gateway.mcp.principals import Principal

SYNC_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class TaskRow:
    task_id: str
    context_id: str
    owner_id: str
    server_id: str | None
    state: str
    status_at: datetime
    message_only: bool


def _row(r: Any) -> TaskRow:
    return TaskRow(
        task_id=r["task_id"],
        context_id=r["context_id"],
        owner_id=str(r["owner_id"]),
        server_id=r["server_id"],
        state=r["state"],
        status_at=r["status_at"],
        message_only=r["message_only"],
    )


async def caught_up(pool: asyncpg.Pool[Any], event_log: EventLog) -> bool:
    """Wait until the task store has every chat event appended so far (at most 5 s)."""
    target = await event_log.last_sequence(subjects.ALL_CHAT_EVENTS)
    deadline = time.monotonic() + SYNC_TIMEOUT_S
    while True:
        position = await pool.fetchval(
            "SELECT position FROM projection_positions WHERE name = $1", NAME
        )
        if int(position or 0) >= target:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)


async def locate(pool: asyncpg.Pool[Any], principal: Principal, task_id: str) -> TaskRow | None:
    """The caller's task on this server (another user's or server's task is not found)."""
    r = await pool.fetchrow(
        """SELECT task_id, context_id, owner_id, server_id, state, status_at, message_only
           FROM a2a_tasks WHERE task_id = $1 AND NOT deleted""",
        task_id,
    )
    if r is None or r["message_only"]:
        return None
    row = _row(r)
    if row.owner_id != principal.user_id or row.server_id != principal.server_id:
        return None
    return row


def page_token(row: TaskRow) -> str:
    raw = f"{row.status_at.isoformat()}|{row.task_id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def read_token(token: str) -> tuple[datetime, str] | None:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        at, _, task_id = raw.partition("|")
        return datetime.fromisoformat(at), task_id
    except (ValueError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class ListFilter:
    context_id: str | None = None
    state: str | None = None
    after: datetime | None = None


async def list_tasks(
    pool: asyncpg.Pool[Any],
    principal: Principal,
    wanted: ListFilter,
    *,
    cursor: tuple[datetime, str] | None,
    page_size: int,
) -> tuple[list[TaskRow], int]:
    """One page of the caller's tasks on this server, newest status first, and the total."""
    where = [
        "owner_id = $1",
        "server_id IS NOT DISTINCT FROM $2",
        "NOT deleted",
        "NOT message_only",
    ]
    args: list[Any] = [uuid.UUID(principal.user_id), principal.server_id]
    if wanted.context_id is not None:
        args.append(wanted.context_id)
        where.append(f"context_id = ${len(args)}")
    if wanted.state is not None:
        args.append(wanted.state)
        where.append(f"state = ${len(args)}")
    if wanted.after is not None:
        args.append(wanted.after)
        where.append(f"status_at >= ${len(args)}")
    clause = " AND ".join(where)
    total = int(await pool.fetchval(f"SELECT count(*) FROM a2a_tasks WHERE {clause}", *args))
    page_args = list(args)
    page_where = clause
    if cursor is not None:
        page_args.extend(cursor)
        n = len(page_args)
        page_where += f" AND (status_at, task_id) < (${n - 1}, ${n})"
    page_args.append(page_size + 1)
    rows = await pool.fetch(
        f"""SELECT task_id, context_id, owner_id, server_id, state, status_at, message_only
            FROM a2a_tasks WHERE {page_where}
            ORDER BY status_at DESC, task_id DESC LIMIT ${len(page_args)}""",
        *page_args,
    )
    return [_row(r) for r in rows], total


# -- switches ------------------------------------------------------------------------------
async def a2a_surface(pool: asyncpg.Pool[Any], principal: Principal) -> ChatSurface | None:
    """The surface's credential and model for A2A turns (as `chat_surface` resolves them), or
    None while A2A is off on it: one query on the SendMessage path instead of three."""
    owner = uuid.UUID(principal.user_id)
    if principal.server_id is None:
        row = await pool.fetchrow(
            """SELECT a2a_enabled AND mcp_chat_enabled AS on,
                      mcp_chat_credential_id AS cred, mcp_chat_model AS model,
                      preferred_credential_id AS pref_cred, preferred_model AS pref_model
               FROM assistant_settings WHERE user_id = $1""",
            owner,
        )
    else:
        row = await pool.fetchrow(
            """SELECT m.a2a_enabled AND m.chat_enabled AS on,
                      m.chat_credential_id AS cred, m.chat_model AS model,
                      s.preferred_credential_id AS pref_cred, s.preferred_model AS pref_model
               FROM mcp_servers m LEFT JOIN assistant_settings s ON s.user_id = m.owner_id
               WHERE m.id = $1 AND m.owner_id = $2""",
            uuid.UUID(principal.server_id),
            owner,
        )
    if row is None or not row["on"]:
        return None
    cred = str(row["cred"]) if row["cred"] else None
    model = row["model"] or None
    if cred is None and row["pref_cred"]:
        cred = str(row["pref_cred"])
        model = model or row["pref_model"]
    return ChatSurface(enabled=True, credential_id=cred, model=model)


async def domain_card_on(pool: asyncpg.Pool[Any]) -> bool:
    """The domain card exists while at least one user has A2A on for the default server."""
    return bool(
        await pool.fetchval(
            """SELECT EXISTS (SELECT 1 FROM assistant_settings
                              WHERE a2a_enabled AND mcp_chat_enabled)"""
        )
    )


async def server_card_on(pool: asyncpg.Pool[Any], server_id: str) -> bool:
    try:
        sid = uuid.UUID(server_id)
    except ValueError:
        return False
    return bool(
        await pool.fetchval(
            "SELECT a2a_enabled AND chat_enabled FROM mcp_servers WHERE id = $1", sid
        )
    )


async def enable_for_admins(pool: asyncpg.Pool[Any]) -> int:
    """Conformance mode: A2A (and the agent under it) on for every administrator."""
    rows = await pool.fetch(
        """INSERT INTO assistant_settings (user_id, mcp_chat_enabled, a2a_enabled)
           SELECT id, true, true FROM users WHERE is_admin
           ON CONFLICT (user_id) DO UPDATE SET mcp_chat_enabled = true, a2a_enabled = true
           RETURNING user_id"""
    )
    return len(rows)


def is_state(value: str) -> bool:
    return value in wire.STATES
