"""Opening a review (token, link, expiry timer) and expiring it, from the review's work item.

The token is drawn once: `ReviewOpened` is appended to the work item after what it holds
(expected sequence), so a redelivered or concurrently handled request reuses the recorded
token instead of drawing another. The expiry is a scheduled message on the log (NATS writes
`ReviewExpiryDue` to the work item when it is due), so it survives every restart.
"""

from __future__ import annotations

import logging
import secrets
import time
from datetime import UTC, datetime
from typing import Any

import asyncpg
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.review import (
    ReviewClosed,
    ReviewExpired,
    ReviewExpiryDue,
    ReviewOpened,
    ReviewRequested,
)
from contracts.runs import RunRequested
from libs.config import Settings
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.review import ReviewEnded, close_if_open
from services.review import store

log = logging.getLogger(__name__)

TOKEN_BYTES = 32
MAX_TRIES = 20
MAX_DEPTH = 8


def _now_ms() -> int:
    return int(time.time() * 1000)


class Reviews:
    def __init__(
        self, nc: NATS, event_log: EventLog, pool: asyncpg.Pool[Any], settings: Settings
    ) -> None:
        self._js = nc.jetstream()
        self._log = event_log
        self._pool = pool
        self._settings = settings

    async def open(self, run_id: str, subject: str, requested: ReviewRequested) -> None:
        opened = await self._opened(run_id, subject, requested)
        if opened is None:
            return  # closed (its run was cancelled) before it could be opened
        root, _ = await self._root(run_id)
        await store.record_opened(self._pool, run_id, root, requested, opened)
        await self._schedule_expiry(run_id, requested.request_id, opened.expires_at_ms)
        # The paused agent reports its pause (with the link) once it sees this.
        await self._log.append(
            subjects.agent(run_id, requested.invocation_id),
            [opened],
            message_id=f"opened-{run_id}-{requested.request_id}",
        )

    async def _opened(
        self, run_id: str, subject: str, requested: ReviewRequested
    ) -> ReviewOpened | None:
        for _ in range(MAX_TRIES):
            recorded = await self._log.read(subject)
            for env in recorded:
                if isinstance(env.event, ReviewOpened):
                    return env.event
            if any(isinstance(env.event, ReviewClosed) for env in recorded):
                return None
            now = _now_ms()
            hours = requested.timeout_hours or self._settings.review_ttl_h
            token = secrets.token_urlsafe(TOKEN_BYTES)
            base = self._settings.public_url or (await self._root(run_id))[1]
            opened = ReviewOpened(
                request_id=requested.request_id,
                token=token,
                review_url=f"{base}/review/{token}",
                expires_at_ms=now + int(hours * 3_600_000),
                opened_at_ms=now,
            )
            try:
                await self._log.append(
                    subject, [opened], expected_sequence=recorded[-1].sequence if recorded else 0
                )
                return opened
            except ConcurrencyConflict:
                continue  # another delivery opened it meanwhile: use its token
        raise RuntimeError(f"could not open review {requested.request_id}")

    async def _root(self, run_id: str) -> tuple[str, str]:
        """The root run (a review in a child run pauses it too) and its link base."""
        current, base = run_id, ""
        for _ in range(MAX_DEPTH):
            request = next(
                (
                    e.event
                    for e in await self._log.read(subjects.run_commands(current))
                    if isinstance(e.event, RunRequested)
                ),
                None,
            )
            if request is None:
                break
            base = request.public_base_url or base
            if request.parent is None:
                break
            current = request.parent.run_id
        return current, base

    async def _schedule_expiry(self, run_id: str, request_id: str, at_ms: int) -> None:
        at = datetime.fromtimestamp(max(at_ms, _now_ms() + 1000) / 1000, UTC)
        stamp = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        timer = f"review-{request_id}"
        await self._js.publish(
            subjects.timer_schedule(run_id, timer),
            self._log.codec.encode([ReviewExpiryDue(request_id=request_id)]),
            headers={
                "Nats-Schedule": f"@at {stamp}",
                "Nats-Schedule-Target": subjects.work_item(run_id, "review", request_id),
                "Nats-Msg-Id": f"timer-{run_id}-{timer}",
            },
        )

    async def expire(self, run_id: str, request_id: str) -> None:
        row = await store.pending_row(self._pool, request_id)
        if row is None or row["status"] != "pending":
            return
        expires_ms = int(row["expires_at"].timestamp() * 1000)
        try:
            await close_if_open(
                self._log,
                subjects.agent(run_id, row["invocation_id"]),
                row["agent_sequence"],
                request_id,
                ReviewExpired(request_id=request_id, expires_at_ms=expires_ms),
            )
        except ReviewEnded:
            return  # decided or cancelled first: its own writer closes the read model
        await self._log.append(
            subjects.work_item(run_id, "review", request_id),
            [ReviewClosed(request_id=request_id, status="expired", closed_at_ms=_now_ms())],
            message_id=f"expired-{run_id}-{request_id}",
        )
        log.info("review %s of run %s expired", request_id, run_id)
