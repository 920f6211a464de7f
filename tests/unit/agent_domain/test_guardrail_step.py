"""The guardrail step in the agent decider: classify once after the start, before any model
call; a recorded violation fails the node without retry; a recorded check is never redone."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.agents import AgentRequested, AgentStarted, GuardrailChecked
from contracts.base import Event
from libs.workflow.agent_fields import GUARDRAIL_CATEGORIES
from services.agent_runtime.domain import (
    AgentState,
    CallModel,
    Classify,
    Fail,
    Start,
    evolve,
    next_step,
)
from services.agent_runtime.guardrails.classifier import (
    DESCRIPTIONS,
    UnusableVerdict,
    violated_categories,
)

pytestmark = pytest.mark.unit


def state(*events: Event, **data: Any) -> AgentState:
    s = AgentState()
    request = AgentRequested(
        invocation_id="i1",
        node_id="a",
        node_label="bot",
        node={"id": "a", "type": "agent", "data": {"label": "bot", **data}},
    )
    for seq, event in enumerate((request, *events), start=1):
        evolve(s, event, seq)
    return s


STARTED = AgentStarted(
    invocation_id="i1", node_id="a", node_label="bot", messages=[{"role": "user", "content": "x"}]
)
ON = {"guardrailsEnabled": True, "guardrailsCategories": ["violence"]}


def test_without_guardrails_the_model_is_called_after_the_start() -> None:
    assert isinstance(next_step(state()), Start)
    assert isinstance(next_step(state(STARTED)), CallModel)


def test_with_guardrails_the_message_is_classified_before_the_first_model_call() -> None:
    assert isinstance(next_step(state(**ON)), Start)
    assert isinstance(next_step(state(STARTED, **ON)), Classify)


def test_a_passed_check_lets_the_model_be_called_and_is_never_repeated() -> None:
    passed = GuardrailChecked(outcome="passed", categories=["violence"])
    assert isinstance(next_step(state(STARTED, passed, **ON)), CallModel)
    skipped = GuardrailChecked(outcome="skipped")
    assert isinstance(next_step(state(STARTED, skipped, **ON)), CallModel)


def test_a_violation_fails_without_retry_naming_category_and_severity() -> None:
    check = GuardrailChecked(
        outcome="violated", categories=["violence"], severity="high", violated=["violence"]
    )
    step = next_step(state(STARTED, check, **ON))
    assert isinstance(step, Fail)
    assert not step.retryable
    assert "violence" in step.error
    assert "high" in step.error


def test_a_failed_check_blocks_and_is_retryable_only_when_the_model_was_unreachable() -> None:
    busy = GuardrailChecked(outcome="failed", error="HTTP 503", retryable=True)
    step = next_step(state(STARTED, busy, **ON))
    assert isinstance(step, Fail)
    assert step.retryable
    garbled = GuardrailChecked(outcome="failed", error="not JSON")
    step = next_step(state(STARTED, garbled, **ON))
    assert isinstance(step, Fail)
    assert not step.retryable
    assert "blocked" in step.error


def test_the_first_recorded_check_wins() -> None:
    first = GuardrailChecked(outcome="violated", violated=["violence"])
    later = GuardrailChecked(outcome="passed")
    assert isinstance(next_step(state(STARTED, first, later, **ON)), Fail)


def test_every_category_has_a_description() -> None:
    assert set(DESCRIPTIONS) == set(GUARDRAIL_CATEGORIES)


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ('{"violated": []}', []),
        ('{"violated": ["violence", "nsfw"]}', ["violence"]),
        ('```json\n{"violated": ["violence"]}\n```', ["violence"]),
    ],
)
def test_the_verdict_names_only_checked_categories(answer: str, found: list[str]) -> None:
    assert violated_categories(answer, ["violence", "harassment"]) == found


@pytest.mark.parametrize("answer", ["", "no", '{"ok": true}', '{"violated": "violence"}', "[]"])
def test_an_unusable_verdict_is_refused(answer: str) -> None:
    with pytest.raises(UnusableVerdict):
        violated_categories(answer, ["violence"])
