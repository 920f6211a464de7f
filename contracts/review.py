"""Human review (HITL) events: a paused agent, its review request, the decision, and the pause
reported up to whoever waits for the agent.

The agent's `request_human_review` call is recorded on its aggregate
(`heym.agent.<run>.<invocation>`) as a `ReviewRequested`, and a copy goes to the review
service as a work item (`heym.work.<run>.review.<request_id>`, the review's own subject). The
review service opens it (token, review URL, expiry: `ReviewOpened`, recorded once on the work
item, then copied to the agent's aggregate), keeps a Postgres read model and sets the expiry
as a durable timer on the log (`ReviewExpiryDue`, written by NATS to the work item). A
decision (`ReviewDecided`, by the gateway) or an expiry (`ReviewExpired`, by the review
service) lands on the agent's aggregate with its expected sequence, so exactly one of them
wins. The agent then resumes by replaying its aggregate. `ChildPaused` tells a parent agent
that a child (a sub-agent or a sub-workflow run) is paused for a review further down.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.base import Event

Decision = Literal["accepted", "edited", "refused"]
ReviewEnd = Literal["decided", "expired", "cancelled"]


class ReviewRequested(Event, tag="agent.review_requested", frozen=True):
    """An agent asked a human to review its draft (or a gated tool call) and pauses."""

    request_id: str
    invocation_id: str
    turn: int
    tool_call_id: str
    # 1 for the invocation's first review, 2 for the next, ...
    checkpoint: int = 1
    summary: str = ""
    draft_text: str = ""
    reason: str = ""
    tool_name: str = "request_human_review"
    tool_source: str = "hitl"
    tool_arguments: str = ""
    # For a gated MCP call: how an approval matches later calls (`exact_args` | `tool_name`).
    match_strategy: str = ""
    workflow_id: str = ""
    workflow_name: str = ""
    node_id: str = ""
    node_label: str = ""
    owner_id: str = ""
    # The agent node's `hitlTimeoutHours`, if set (else HEYM_REVIEW_TTL_H).
    timeout_hours: float | None = None
    # Earlier checkpoints' outcomes in this invocation (Heym's `hitlHistory`).
    hitl_history: list[dict[str, Any]] = msgspec.field(default_factory=list)
    requested_at_ms: int = 0
    test_run: bool = False
    # Only on the work-item copy: where the request sits on the agent's aggregate.
    agent_sequence: int = 0


class ReviewOpened(Event, tag="review.opened", frozen=True):
    """The review service opened a request: its single-use token and when it expires.

    Recorded once on the work item (expected sequence), then copied to the agent's aggregate,
    which then reports its pause (the pending node result with the review URL)."""

    request_id: str
    token: str
    review_url: str
    expires_at_ms: int
    opened_at_ms: int = 0


class ReviewDecided(Event, tag="agent.review_decided", frozen=True):
    """A reviewer's decision (from the review page or the API), on the agent's aggregate."""

    request_id: str
    decision: Decision
    edited_text: str | None = None
    refusal_reason: str | None = None
    decided_at_ms: int = 0


class ReviewExpired(Event, tag="agent.review_expired", frozen=True):
    """No decision came in time: the paused agent fails with a clear error."""

    request_id: str
    expires_at_ms: int = 0


class ReviewExpiryDue(Event, tag="review.expiry_due", frozen=True):
    """Written by NATS (a scheduled message) on the review's work item when it expires."""

    request_id: str


class ReviewClosed(Event, tag="review.closed", frozen=True):
    """The review ended (decided, expired or cancelled with its run), on the work item: the
    review service's read model follows it."""

    request_id: str
    status: ReviewEnd
    decision: Decision | None = None
    edited_text: str | None = None
    refusal_reason: str | None = None
    resolved_output: Any = None
    closed_at_ms: int = 0


class ChildPaused(Event, tag="agent.child_paused", frozen=True):
    """A child of this agent (a sub-agent, or a sub-workflow run) is paused for a human
    review further down: this agent pauses too and reports the innermost pending payload."""

    tool_call_id: str
    request_id: str
    child: str
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    turn: int = 0


REVIEW_EVENTS: tuple[type[Event], ...] = (
    ReviewRequested,
    ReviewOpened,
    ReviewDecided,
    ReviewExpired,
    ReviewExpiryDue,
    ReviewClosed,
    ChildPaused,
)
