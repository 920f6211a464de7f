"""Human review decisions (Heym §5.5): find a review by its token (the review page and API)
or by its request id for its owner (the Heym Agent's `resolve_hitl_review`), say how it
stands, and record a decision on the paused agent's aggregate exactly once.

The token is the credential (public endpoints): only its SHA-256 is stored. A decision is
appended after what the agent's aggregate holds since the request (expected sequence), so two
decisions posted at once cannot both win, whoever posts them, nor a decision and the expiry; a
review whose run was cancelled answers 410 and resumes nothing.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import asyncpg

from contracts import subjects
from contracts.review import Decision, ReviewClosed, ReviewDecided
from contracts.runs import CancelRequested
from libs.eventlog import EventLog
from libs.review.aggregate import ReviewEnded, close_if_open

MAX_EDIT_CHARS = 100_000
MAX_REASON_CHARS = 10_000
ACTIONS: dict[str, Decision] = {"accept": "accepted", "edit": "edited", "refuse": "refused"}
Standing = Literal["pending", "decided", "expired", "cancelled"]


class DecisionRefused(Exception):
    """A decision that cannot be taken: `status` is the HTTP status to answer with."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class Found:
    row: asyncpg.Record
    standing: Standing

    @property
    def request_id(self) -> str:
        return str(self.row["request_id"])


def token_hash(token: str) -> str:
    """How a review token is stored and looked up (never the token itself)."""
    return hashlib.sha256(token.encode()).hexdigest()


async def find(pool: asyncpg.Pool[Any], event_log: EventLog, token: str) -> Found | None:
    """The review behind `token` and how it stands now (None: no such token)."""
    if not token or len(token) > 128:
        return None
    row = await pool.fetchrow(
        "SELECT * FROM review_requests WHERE token_hash = $1", token_hash(token)
    )
    return await _standing(event_log, row)


async def find_for_owner(
    pool: asyncpg.Pool[Any], event_log: EventLog, request_id: str, owner_id: str
) -> Found | None:
    """The review `request_id` if it pauses a run of `owner_id` (None otherwise)."""
    try:
        owner = uuid.UUID(owner_id)
    except (ValueError, TypeError):
        return None
    if not request_id or len(request_id) > 128:
        return None
    row = await pool.fetchrow(
        "SELECT * FROM review_requests WHERE request_id = $1 AND owner_id = $2",
        request_id,
        owner,
    )
    return await _standing(event_log, row)


async def _standing(event_log: EventLog, row: asyncpg.Record | None) -> Found | None:
    if row is None:
        return None
    standing: Standing = row["status"]
    if standing == "pending":
        if row["expires_at"] <= datetime.now(UTC):
            standing = "expired"
        elif await _run_cancelled(event_log, row):
            standing = "cancelled"
    return Found(row=row, standing=standing)


async def _run_cancelled(event_log: EventLog, row: asyncpg.Record) -> bool:
    """Whether the review's run, or the root run it pauses, was asked to stop. (A run that
    ended otherwise has ended its agents too: the agent's aggregate says so.)"""
    for run_id in {row["run_id"], row["root_run_id"]}:
        for env in await event_log.read(subjects.run_commands(run_id)):
            if isinstance(env.event, CancelRequested):
                return True
    return False


def validate(body: Any) -> tuple[Decision, str | None, str | None]:
    """(decision, edited text, refusal reason) from a decision body; 422 when malformed."""
    if not isinstance(body, dict):
        raise DecisionRefused(422, "send a JSON object {action, edited_text?, refusal_reason?}")
    action = body.get("action")
    if action not in ACTIONS:
        raise DecisionRefused(422, "action must be one of accept, edit, refuse")
    edited = body.get("edited_text")
    reason = body.get("refusal_reason")
    if edited is not None and not isinstance(edited, str):
        raise DecisionRefused(422, "edited_text must be a string")
    if reason is not None and not isinstance(reason, str):
        raise DecisionRefused(422, "refusal_reason must be a string")
    if action == "edit":
        if not edited or not edited.strip():
            raise DecisionRefused(422, "an edit needs a non-empty edited_text")
        if len(edited) > MAX_EDIT_CHARS:
            raise DecisionRefused(
                422, f"edited_text is {len(edited):,} characters; at most {MAX_EDIT_CHARS:,}"
            )
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        raise DecisionRefused(
            422, f"refusal_reason may hold at most {MAX_REASON_CHARS:,} characters"
        )
    return (
        ACTIONS[action],
        edited if action == "edit" else None,
        reason if action == "refuse" else None,
    )


def resolved_output(row: asyncpg.Record, decided: ReviewDecided) -> dict[str, Any]:
    """Heym's `resolved_output` (§5.5), from the request and the decision."""
    draft = str(row["draft_text"])
    text = {"accepted": draft, "edited": decided.edited_text or "", "refused": ""}[decided.decision]
    review_text = {
        "accepted": draft,
        "edited": decided.edited_text or "",
        "refused": decided.refusal_reason or "",
    }[decided.decision]
    out: dict[str, Any] = {
        "text": text,
        "decision": decided.decision,
        "summary": row["summary"],
        "originalDraft": draft,
        "reviewText": review_text,
        "requestId": row["request_id"],
    }
    if decided.decision == "edited":
        out["editedText"] = decided.edited_text
    if decided.decision == "refused":
        out["refusalReason"] = decided.refusal_reason or ""
    return out


async def decide(
    pool: asyncpg.Pool[Any], event_log: EventLog, token: str, body: Any
) -> tuple[Found, ReviewDecided]:
    """Record a decision; raises `DecisionRefused` (404, 409, 410, 422) when it cannot be."""
    decision = validate(body)
    found = await find(pool, event_log, token)
    if found is None:
        raise DecisionRefused(404, "no review request for this link")
    return found, await record_decision(event_log, found, *decision)


async def record_decision(
    event_log: EventLog,
    found: Found,
    decision: Decision,
    edited: str | None,
    reason: str | None,
) -> ReviewDecided:
    """The one way a decision is taken (review page, API, Heym Agent): appended after the
    request on the agent's aggregate, so exactly one decision (or the expiry) wins."""
    _refuse_unless_pending(found.standing)
    row = found.row
    decided = ReviewDecided(
        request_id=found.request_id,
        decision=decision,
        edited_text=edited,
        refusal_reason=reason,
        decided_at_ms=int(time.time() * 1000),
    )
    try:
        await close_if_open(
            event_log,
            subjects.agent(row["run_id"], row["invocation_id"]),
            row["agent_sequence"],
            found.request_id,
            decided,
        )
    except ReviewEnded as ended:
        _refuse_unless_pending(ended.state)
        raise
    closed = ReviewClosed(
        request_id=found.request_id,
        status="decided",
        decision=decision,
        edited_text=edited,
        refusal_reason=reason,
        resolved_output=resolved_output(row, decided),
        closed_at_ms=decided.decided_at_ms,
    )
    await event_log.append(subjects.work_item(row["run_id"], "review", found.request_id), [closed])
    return decided


def _refuse_unless_pending(standing: str) -> None:
    if standing == "decided":
        raise DecisionRefused(409, "this review was already decided")
    if standing == "expired":
        raise DecisionRefused(410, "this review link has expired")
    if standing == "cancelled":
        raise DecisionRefused(410, "the run this review belongs to was cancelled")
