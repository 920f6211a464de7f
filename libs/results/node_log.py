"""Appending to a node invocation's result subject (`heym.run.<run>.node.<invocation>`) so
that each result is recorded exactly once, with pending markers allowed before the final one.

A node that pauses for a human review records a `pending` NodeCompleted per checkpoint, then
exactly one final result (a non-pending NodeCompleted or a NodeAttemptFailed). Writers try the
common case first (an empty subject: expected sequence 0, no read); on a conflict they read
the subject (a handful of messages) and append after what is there, unless what they want to
record is there already. A pending marker is never recorded after the final result.
"""

from __future__ import annotations

from contracts.base import Event
from contracts.nodes import NodeAttemptFailed, NodeCompleted
from libs.eventlog import ConcurrencyConflict, EventLog

MAX_TRIES = 20


def _is_final(event: object) -> bool:
    if isinstance(event, NodeAttemptFailed):
        return True
    return isinstance(event, NodeCompleted) and event.status != "pending"


def _request_of(event: object) -> str | None:
    if isinstance(event, NodeCompleted) and event.status == "pending":
        found = event.metadata.get("review_request_id")
        return str(found) if found else None
    return None


async def append_result(
    event_log: EventLog,
    subject: str,
    result: Event,
    *,
    message_id: str,
    correlation_id: str | None = None,
    traceparent: str | None = None,
) -> bool:
    """Record `result` (a final result, or a pending marker carrying
    `metadata.review_request_id`) once. False when it was not recorded because it (or, for a
    pending marker, the final result) is already there."""
    pending = _request_of(result)
    expected = 0
    for _ in range(MAX_TRIES):
        try:
            await event_log.append(
                subject,
                [result],
                expected_sequence=expected,
                message_id=message_id,
                correlation_id=correlation_id,
                traceparent=traceparent,
            )
            return True
        except ConcurrencyConflict:
            pass
        recorded = await event_log.read(subject)
        if not recorded:
            expected = 0
            continue
        if any(_is_final(env.event) for env in recorded):
            return False  # the final result is there: nothing more is recorded
        if pending is not None and any(_request_of(env.event) == pending for env in recorded):
            return False  # this checkpoint's marker is there already
        expected = recorded[-1].sequence
    raise ConcurrencyConflict(subject, expected, None)
