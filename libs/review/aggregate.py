"""Ending a review on the paused agent's aggregate exactly once.

A decision (the gateway) and an expiry (the review service) both end a review by appending to
the agent's aggregate `heym.agent.<run>.<invocation>`. Each writer reads what was appended
after the review's request, checks the review is still open, and appends with the aggregate's
last sequence as the expected one. Two writers racing (two decisions posted at once, a
decision and the expiry) cannot both succeed: the loser's append conflicts, it reads again and
finds the review ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from contracts.agents import AgentCancelRequested, AgentFinished
from contracts.base import Envelope, Event
from contracts.review import ReviewDecided, ReviewExpired
from libs.eventlog import ConcurrencyConflict, EventLog

State = Literal["open", "decided", "expired", "cancelled"]
MAX_TRIES = 20


class ReviewEnded(Exception):
    """The review is not open any more; `state` says how it ended."""

    def __init__(self, state: State) -> None:
        super().__init__(f"the review is {state}")
        self.state = state


def review_state(after_request: Sequence[Envelope], request_id: str) -> State:
    """How the review stands, from the aggregate's events after its request."""
    for env in after_request:
        ev = env.event
        if isinstance(ev, ReviewDecided) and ev.request_id == request_id:
            return "decided"
        if isinstance(ev, ReviewExpired) and ev.request_id == request_id:
            return "expired"
        if isinstance(ev, AgentCancelRequested | AgentFinished):
            return "cancelled"
    return "open"


async def close_if_open(
    event_log: EventLog,
    subject: str,
    request_sequence: int,
    request_id: str,
    event: Event,
) -> None:
    """Append `event` (a decision or an expiry) if the review is still open, after whatever
    the aggregate holds; raises `ReviewEnded` otherwise.

    Each attempt has a message id of its own: two writers sharing one would make the loser's
    conflict look like its own landed append (the log reports a duplicate for a conflict with
    a message of the same id)."""
    for _ in range(MAX_TRIES):
        tail = await event_log.read(subject, after=request_sequence)
        state = review_state(tail, request_id)
        if state != "open":
            raise ReviewEnded(state)
        expected = tail[-1].sequence if tail else request_sequence
        try:
            await event_log.append(subject, [event], expected_sequence=expected)
            return
        except ConcurrencyConflict:
            continue  # someone appended meanwhile: read again
    raise ConcurrencyConflict(subject, request_sequence, None)
