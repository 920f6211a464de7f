"""The agent decider and a human review: pause, wait, apply the decision, fail on expiry, stop
on cancel, pause for a child's review; and the reviewer-facing summary (Heym §5.1)."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.agents import AgentCancelRequested, LlmCallRecorded
from contracts.review import (
    ChildPaused,
    ReviewDecided,
    ReviewExpired,
    ReviewOpened,
    ReviewRequested,
)
from services.agent_runtime.domain import (
    ApplyDecision,
    CallModel,
    Cancel,
    Fail,
    Paused,
    next_step,
)
from services.agent_runtime.domain.review import (
    active_approval,
    decision_fields,
    derive_summary,
    pending_payload,
)
from tests.unit.agent_domain.test_next_step import dispatched, fold, llm, request, result, started

pytestmark = pytest.mark.unit


def review_turn(turn: int = 1, call: str = "r1") -> LlmCallRecorded:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call,
                "type": "function",
                "function": {"name": "request_human_review", "arguments": "{}"},
            }
        ],
    }
    return LlmCallRecorded(turn=turn, model="m", message=message)


def asked(turn: int = 1, call: str = "r1", rid: str = "q1") -> ReviewRequested:
    return ReviewRequested(
        request_id=rid,
        invocation_id="i2",
        turn=turn,
        tool_call_id=call,
        summary="Send it",
        draft_text="the draft",
        requested_at_ms=1000,
    )


def opened(rid: str = "q1") -> ReviewOpened:
    return ReviewOpened(
        request_id=rid, token="t", review_url="http://h/review/t", expires_at_ms=5000
    )


def decided(decision: str = "accepted", rid: str = "q1", **extra: Any) -> ReviewDecided:
    return ReviewDecided(request_id=rid, decision=decision, decided_at_ms=2000, **extra)  # type: ignore[arg-type]


def test_a_review_pauses_until_opened_then_reports_the_link() -> None:
    base = [request(hitlEnabled=True), started(), review_turn(), asked()]
    step = next_step(fold(*base))
    assert step == Paused(request_id="q1", payload=None)
    step = next_step(fold(*base, opened()))
    assert isinstance(step, Paused)
    assert step.payload is not None
    assert step.payload["reviewUrl"] == "http://h/review/t"
    assert step.payload["decision"] is None
    assert step.payload["shareText"] == "Send it\nReview link: http://h/review/t"


def test_an_approval_answers_the_review_call_and_the_conversation_goes_on() -> None:
    base = [request(hitlEnabled=True), started(), review_turn(), asked(), opened()]
    after = fold(*base, decided())
    # no step in between: the next model request follows the decision at once
    assert next_step(after) == CallModel(turn=2, attempt=1)
    tool = after.messages()[-1]
    assert tool["role"] == "tool"
    assert tool["tool_call_id"] == "r1"
    assert '"approved_markdown": "the draft"' in tool["content"]
    fields = decision_fields(after)
    assert fields["decision"] == "accepted"
    assert fields["approvedMarkdown"] == "the draft"
    assert [h["requestId"] for h in fields["hitlHistory"]] == ["q1"]


def test_a_refusal_is_applied_as_a_step() -> None:
    base = [request(hitlEnabled=True), started(), review_turn(), asked(), opened()]
    assert next_step(fold(*base, decided("refused"))) == ApplyDecision(request_id="q1")


def test_only_the_first_end_of_a_review_counts() -> None:
    base = [request(hitlEnabled=True), started(), review_turn(), asked(), opened()]
    state = fold(*base, decided("refused"), decided("accepted"), ReviewExpired(request_id="q1"))
    review = state.reviews["q1"]
    assert review.decided is not None
    assert review.decided.decision == "refused"
    assert review.expired is None


def test_an_expired_review_fails_without_retry() -> None:
    base = [request(hitlEnabled=True), started(), review_turn(), asked(), opened()]
    step = next_step(fold(*base, ReviewExpired(request_id="q1", expires_at_ms=5000)))
    assert isinstance(step, Fail)
    assert "expired" in step.error
    assert step.retryable is False


def test_a_cancel_wins_over_a_waiting_review() -> None:
    base = [request(hitlEnabled=True), started(), review_turn(), asked(), opened()]
    step = next_step(fold(*base, AgentCancelRequested(reason="stop")))
    assert isinstance(step, Cancel)


def test_a_paused_child_pauses_its_parent() -> None:
    base = [request(isOrchestrator=True), started(), llm(1, "c1", "c2"), dispatched(1, "c1", "c2")]
    pause = ChildPaused(tool_call_id="c1", request_id="q9", child="i2s1", payload={"x": 1}, turn=1)
    assert next_step(fold(*base, result(1, "c2"), pause)) == Paused(
        request_id="q9", payload={"x": 1}, own=False
    )
    # the child's end arrives: the parent goes on
    resumed = fold(*base, result(1, "c2"), pause, result(1, "c1"))
    assert next_step(resumed) == CallModel(turn=2, attempt=1)


def test_after_an_edit_later_reviews_are_already_approved_until_another_tool_runs() -> None:
    base = [request(hitlEnabled=True), started(), review_turn(), asked(), opened()]
    edited = fold(*base, decided("edited", edited_text="new text"))
    assert active_approval(edited) == "new text"
    consumed = fold(*base, decided("edited", edited_text="new text"), llm(2, "t1"))
    assert active_approval(consumed) is None


def test_pending_payload_without_a_link_yet() -> None:
    state = fold(request(hitlEnabled=True), started(), review_turn(), asked())
    payload = pending_payload(state.reviews["q1"])
    assert payload["reviewUrl"] is None
    assert payload["shareMarkdown"] is None


@pytest.mark.parametrize(
    ("summary", "markdown", "reason", "label", "expected"),
    [
        ("**Send** the `email`", "", "", "a", "Send the email"),
        ("x" * 200, "", "", "a", "x" * 137 + "..."),
        ("", "# Draft\n\nReview\n\nHello *team*, we launch.", "", "a", "Hello team, we launch."),
        ("", "# Only a heading", "emails customers", "a", "emails customers"),
        ("", "", "", "writer", "writer requires review."),
        ("", "", "", "", "Human review required"),
    ],
)
def test_summary_derivation(
    summary: str, markdown: str, reason: str, label: str, expected: str
) -> None:
    got = derive_summary(summary, markdown, reason, label)
    assert got == expected
    assert len(got) <= 140
