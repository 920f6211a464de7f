"""What the guardrail check (Heym §4.1) asks of the decider: classify the user message once,
before the first model call, and end the invocation when the recorded check blocks it."""

from __future__ import annotations

from contracts.agents import GuardrailChecked
from services.agent_runtime.domain.state import AgentState


def needs_classification(state: AgentState) -> bool:
    """Guardrails are on and no check is recorded yet (a replay never classifies again)."""
    return bool(state.data.get("guardrailsEnabled")) and state.guardrail is None


def blocked(check: GuardrailChecked | None) -> tuple[str, bool] | None:
    """The error (and whether a retry may help) when the recorded check stops the node."""
    if check is None:
        return None
    if check.outcome == "violated":
        names = ", ".join(check.violated) or "unknown"
        return (
            "Guardrail violation: message blocked due to prohibited content. "
            f"Violated categories: {names}. Severity: {check.severity}",
            False,  # a violation is never retried
        )
    if check.outcome == "failed":
        reason = check.error or "the guardrail model gave no usable answer"
        return (
            f"Content safety check failed: {reason}. Message blocked for safety.",
            check.retryable,
        )
    return None
