"""The review read model (`review_requests`): rows written by the review service from its
work items, read by the gateway's review endpoints and page."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from contracts.review import ReviewClosed, ReviewOpened, ReviewRequested
from libs.eventlog.log import utc_from_ms
from libs.review.decisions import token_hash

_INSERT = """
    INSERT INTO review_requests (request_id, token_hash, run_id, root_run_id, invocation_id,
        agent_sequence, owner_id, workflow_id, workflow_name, agent_node_id, agent_label,
        summary, draft_text, review_url, checkpoint, test_run, expires_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
    ON CONFLICT (request_id) DO NOTHING"""

_CLOSE = """
    UPDATE review_requests SET status = $2, decision = $3, edited_text = $4,
        refusal_reason = $5, resolved_output = $6, resolved_at = $7
    WHERE request_id = $1 AND status = 'pending'"""


def _uuid_or_none(value: str) -> str | None:
    return value if len(value) == 36 and value.count("-") == 4 else None


async def record_opened(
    pool: asyncpg.Pool[Any],
    run_id: str,
    root_run_id: str,
    requested: ReviewRequested,
    opened: ReviewOpened,
) -> None:
    await pool.execute(
        _INSERT,
        requested.request_id,
        token_hash(opened.token),
        run_id,
        root_run_id,
        requested.invocation_id,
        requested.agent_sequence,
        _uuid_or_none(requested.owner_id),
        requested.workflow_id,
        requested.workflow_name,
        requested.node_id,
        requested.node_label,
        requested.summary,
        requested.draft_text,
        opened.review_url,
        requested.checkpoint,
        requested.test_run,
        utc_from_ms(opened.expires_at_ms),
    )


async def record_closed(pool: asyncpg.Pool[Any], closed: ReviewClosed, at: datetime) -> None:
    await pool.execute(
        _CLOSE,
        closed.request_id,
        closed.status,
        closed.decision,
        closed.edited_text,
        closed.refusal_reason,
        closed.resolved_output,
        utc_from_ms(closed.closed_at_ms) if closed.closed_at_ms else at,
    )


async def pending_row(pool: asyncpg.Pool[Any], request_id: str) -> asyncpg.Record | None:
    row: asyncpg.Record | None = await pool.fetchrow(
        "SELECT * FROM review_requests WHERE request_id = $1", request_id
    )
    return row
