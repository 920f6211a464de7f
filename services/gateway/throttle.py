"""Per-workflow rate limit and response cache (Heym's `rate_limit_requests`,
`rate_limit_window_seconds`, `cache_ttl_seconds`), kept in Postgres so every gateway replica
shares them. Requests they answer get their own history row (`rate_limited`, `cached`)."""

from __future__ import annotations

import hashlib
import math
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import msgspec

from services.gateway import store

MAX_WINDOW_S = 7 * 24 * 3600
MAX_CACHE_TTL_S = 30 * 24 * 3600


@dataclass(frozen=True)
class Limit:
    limited: bool
    headers: dict[str, str]


def _int_setting(row: store.WorkflowRow, name: str) -> int:
    value = row.settings.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def settings_problems(settings: dict[str, Any]) -> list[dict[str, str]]:
    """422 problems for rate-limit and cache settings that are not usable numbers."""
    problems = []
    for name, top in (
        ("rate_limit_requests", 1_000_000),
        ("rate_limit_window_seconds", MAX_WINDOW_S),
        ("cache_ttl_seconds", MAX_CACHE_TTL_S),
    ):
        value = settings.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
            problems.append(
                {"field": name, "message": f"{name} must be an integer from 0 to {top}"}
            )
    return problems


async def check_rate(pool: asyncpg.Pool[Any], row: store.WorkflowRow, client: str) -> Limit | None:
    """Count this request in the workflow's sliding window; None when no limit is set."""
    limit = _int_setting(row, "rate_limit_requests")
    if not limit:
        return None
    window = _int_setting(row, "rate_limit_window_seconds") or 60
    wid = uuid.UUID(row.id)
    async with pool.acquire() as conn, conn.transaction():
        # One writer per workflow and client at a time, whichever replica it is on.
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", f"{wid}|{client}"
        )
        now = datetime.now(UTC)
        start = now - timedelta(seconds=window)
        await conn.execute(
            "DELETE FROM rate_limit_hits WHERE workflow_id = $1 AND client = $2 AND at <= $3",
            wid,
            client,
            start,
        )
        seen = await conn.fetchrow(
            """SELECT count(*) AS count, min(at) AS oldest FROM rate_limit_hits
               WHERE workflow_id = $1 AND client = $2""",
            wid,
            client,
        )
        assert seen is not None  # an aggregate always returns a row
        count, oldest = seen["count"], seen["oldest"]
        reset_at = (oldest or now) + timedelta(seconds=window)
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Reset": str(math.ceil(reset_at.timestamp())),
        }
        if count >= limit:
            retry = max(1, math.ceil((reset_at - now).total_seconds()))
            headers.update({"X-RateLimit-Remaining": "0", "Retry-After": str(retry)})
            return Limit(limited=True, headers=headers)
        await conn.execute(
            "INSERT INTO rate_limit_hits (workflow_id, client, at) VALUES ($1, $2, $3)",
            wid,
            client,
            now,
        )
        headers["X-RateLimit-Remaining"] = str(limit - count - 1)
        return Limit(limited=False, headers=headers)


def cache_ttl(row: store.WorkflowRow) -> int:
    return _int_setting(row, "cache_ttl_seconds")


def cache_key(row: store.WorkflowRow, envelope: dict[str, Any]) -> str:
    """Body and query (as Heym), and the workflow's version: an edit never serves old outputs."""
    raw = msgspec.json.encode(
        {"v": row.version, "body": envelope.get("body"), "query": envelope.get("query")},
        order="sorted",
    )
    return hashlib.sha256(raw).hexdigest()


async def cached(pool: asyncpg.Pool[Any], row: store.WorkflowRow, key: str) -> Any | None:
    found = await pool.fetchval(
        """SELECT outputs FROM response_cache
           WHERE workflow_id = $1 AND cache_key = $2 AND expires_at > now()""",
        uuid.UUID(row.id),
        key,
    )
    return found


async def store_outputs(
    pool: asyncpg.Pool[Any], row: store.WorkflowRow, key: str, outputs: Any
) -> None:
    ttl = cache_ttl(row)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("DELETE FROM response_cache WHERE expires_at <= now()")
        await conn.execute(
            """INSERT INTO response_cache (workflow_id, cache_key, outputs, expires_at)
               VALUES ($1, $2, $3, now() + make_interval(secs => $4))
               ON CONFLICT (workflow_id, cache_key) DO UPDATE
               SET outputs = EXCLUDED.outputs, expires_at = EXCLUDED.expires_at""",
            uuid.UUID(row.id),
            key,
            outputs,
            float(ttl),
        )


async def record(
    pool: asyncpg.Pool[Any],
    row: store.WorkflowRow,
    *,
    owner_id: str,
    status: str,
    source: str,
    inputs: dict[str, Any],
    outputs: Any = None,
) -> str:
    """A history row for a request answered without a run (`cached` or `rate_limited`)."""
    run_id = uuid.uuid4().hex
    now = datetime.now(UTC)
    await pool.execute(
        """INSERT INTO runs (run_id, workflow_id, workflow_name, owner_id, status, trigger_source,
                             inputs, outputs, requested_at, started_at, finished_at,
                             execution_time_ms, last_sequence)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9, 0, 0)""",
        run_id,
        row.id,
        row.name,
        owner_id,
        status,
        source,
        inputs,
        outputs,
        now,
    )
    return run_id
