"""Human review, decided from the fold: the reviewer-facing summary (Heym §5.1), the pending
payload (§5.3), what the model is told after a decision and the output's decision fields
(§5.5). Pure: no clock, no I/O."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from contracts.agents import ToolCallRecorded

if TYPE_CHECKING:
    from services.agent_runtime.domain.state import AgentState, Review

SUMMARY_MAX = 140
DEFAULT_DRAFT = "The agent asked for a human review of its next step."
REVIEW_TOOL = "request_human_review"
_GENERIC = re.compile(
    r"^(draft|review|human review|approval( required)?|please review( (this|the) draft)?|"
    r"summary|request(ed)? review|for review)[:.!]?$",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"(`{1,3}|\*{1,2}|_{1,2}|~~|^#{1,6}\s*|^>\s*|^[-*+]\s+|^\d+\.\s+)", re.M)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def plain(markdown: str) -> str:
    """Markdown reduced to its words on one line (links keep their text)."""
    text = _LINK.sub(r"\1", markdown)
    text = _MARKUP.sub("", text)
    return " ".join(text.split())


def clip(text: str, limit: int = SUMMARY_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def derive_summary(summary: str, markdown: str, reason: str, label: str) -> str:
    """Heym §5.1: the explicit summary, else the draft's first non-generic paragraph, else
    the reason, else "<label> requires review.", else "Human review required"."""
    if plain(summary):
        return clip(plain(summary))
    for paragraph in re.split(r"\n\s*\n", markdown):
        lines = [ln for ln in paragraph.strip().splitlines() if not ln.lstrip().startswith("#")]
        text = plain("\n".join(lines))
        if text and not _GENERIC.match(text):
            return clip(text)
    if plain(reason):
        return clip(plain(reason))
    if label:
        return clip(f"{label} requires review.")
    return "Human review required"


def review_arguments(args: dict[str, Any]) -> tuple[str, str, str]:
    """(markdown, reason, summary) from the tool's arguments and their Heym aliases."""
    markdown = next(
        (str(args[k]) for k in ("review_markdown", "markdown", "text") if args.get(k)), ""
    )
    reason = next((str(args[k]) for k in ("reason", "blocked_action") if args.get(k)), "")
    return markdown or DEFAULT_DRAFT, reason, str(args.get("summary") or "")


def pending_payload(review: Review) -> dict[str, Any]:
    """The paused node's output (and the run's pending outputs): Heym §5.1 and §5.3."""
    r = review.requested
    opened = review.opened
    url = opened.review_url if opened else None
    return {
        "decision": None,
        "summary": r.summary,
        "draftText": r.draft_text,
        "reviewUrl": url,
        "requestId": r.request_id,
        "expiresAt": iso_ms(opened.expires_at_ms) if opened else None,
        "shareText": f"{r.summary}\nReview link: {url}" if url else None,
        "shareMarkdown": f"{r.summary}\n\n[Open review page]({url})" if url else None,
        "hitlHistory": list(r.hitl_history),
    }


def approved_text(review: Review) -> str:
    d = review.decided
    assert d is not None
    if d.decision == "edited" and d.edited_text:
        return d.edited_text
    return review.requested.draft_text


def history_entry(review: Review) -> dict[str, Any]:
    d = review.decided
    assert d is not None
    entry: dict[str, Any] = {
        "requestId": review.requested.request_id,
        "decision": d.decision,
        "summary": review.requested.summary,
        "reviewText": _review_text(review),
        "decidedAt": iso_ms(d.decided_at_ms),
    }
    if d.edited_text is not None and d.decision == "edited":
        entry["editedText"] = d.edited_text
    if d.refusal_reason:
        entry["refusalReason"] = d.refusal_reason
    return entry


def _review_text(review: Review) -> str:
    d = review.decided
    assert d is not None
    if d.decision == "edited" and d.edited_text:
        return d.edited_text
    if d.decision == "refused":
        return d.refusal_reason or ""
    return review.requested.draft_text


def tool_result(review: Review) -> dict[str, Any]:
    """What the model receives as the review call's result (Heym's resume message)."""
    d = review.decided
    assert d is not None
    if d.decision == "refused":
        return {
            "status": "refused",
            "decision": "refused",
            "refusal_reason": d.refusal_reason or "",
            "message": "The human reviewer refused. Stop: do not take the reviewed action.",
        }
    text = approved_text(review)
    return {
        "status": "approved",
        "decision": d.decision,
        "approved_markdown": text,
        "message": (
            f"Human review decision received. Decision: {d.decision}. The human reviewed "
            "the draft; treat the Approved Markdown as the source of truth and continue "
            f"with the task.\n\nApproved Markdown:\n{text}"
        ),
    }


def decision_record(review: Review) -> ToolCallRecorded:
    """The review call's result, a pure function of the decision: an accepted or edited
    review answers its call as soon as the decision is folded, so the conversation goes on
    with no further append before the next model request."""
    r = review.requested
    d = review.decided
    assert d is not None
    return ToolCallRecorded(
        turn=r.turn,
        node_id=r.node_id,
        node_label=r.node_label,
        tool_call_id=r.tool_call_id,
        name=r.tool_name,
        source=r.tool_source,
        arguments=r.tool_arguments,
        result=tool_result(review),
        status="success",
        started_at_ms=r.requested_at_ms,
        finished_at_ms=d.decided_at_ms,
        elapsed_ms=float(max(0, d.decided_at_ms - r.requested_at_ms)),
        extra={"request_id": r.request_id, "decision": d.decision},
    )


def decided_reviews(state: AgentState) -> list[Review]:
    return [r for r in state.reviews.values() if r.decided is not None]


def decision_fields(state: AgentState) -> dict[str, Any]:
    """The agent output's fields after a resume (Heym §4.8 / §5.5), from the last decision;
    `hitlHistory` holds every decided checkpoint of the invocation."""
    decided = decided_reviews(state)
    if not decided:
        return {}
    last = decided[-1]
    d = last.decided
    assert d is not None
    fields: dict[str, Any] = {
        "decision": d.decision,
        "summary": last.requested.summary,
        "originalDraft": last.requested.draft_text,
        "reviewText": _review_text(last),
        "requestId": last.requested.request_id,
        "approvedMarkdown": "" if d.decision == "refused" else approved_text(last),
        "hitlHistory": [history_entry(r) for r in decided],
    }
    if d.decision == "edited" and d.edited_text is not None:
        fields["editedText"] = d.edited_text
    if d.decision == "refused":
        fields["refusalReason"] = d.refusal_reason or ""
    return fields


def active_approval(state: AgentState) -> str | None:
    """After an edit, further review requests answer `already_approved` with the edited
    text until the next non-review tool call consumes the checkpoint (Heym §5.5)."""
    decided = decided_reviews(state)
    if not decided or decided[-1].decided is None or decided[-1].decided.decision != "edited":
        return None
    last = decided[-1]
    for number in range(last.requested.turn + 1, len(state.turns) + 1):
        for call in state.turns[number - 1].tool_calls:
            function = call.get("function") or {}
            if isinstance(function, dict) and function.get("name") != REVIEW_TOOL:
                return None
    return approved_text(last)
