"""The guardrail step: classify the resolved user message before the agent's first model call
and record the verdict (`agent.guardrail_checked`); the decider fails the node on a violation.

The verdict is recorded before anything acts on it, so a restart or a replay never asks the
classifier again. A classifier that cannot be reached, or answers nothing usable, blocks the
message (the check fails closed); an unreachable or busy one is retryable by the node's policy.
"""

from __future__ import annotations

from typing import Any

from contracts.agents import GuardrailChecked
from libs.observability.redaction import sanitize_trace_payload
from libs.workflow.agent_fields import guardrail_categories, guardrail_severity
from services.agent_runtime.guardrails.classifier import (
    MAX_ANSWER_TOKENS,
    UnusableVerdict,
    classification_messages,
    violated_categories,
)
from services.agent_runtime.model import ModelError
from services.agent_runtime.steps.context import AgentFailed, StepContext


async def classify(ctx: StepContext) -> None:
    data = ctx.data
    started = ctx.state.started
    assert started is not None
    categories = guardrail_categories(data)
    severity = guardrail_severity(data)
    text = user_message(started.messages)

    def checked(**fields: Any) -> GuardrailChecked:
        return GuardrailChecked(
            categories=categories,
            severity=severity,
            node_id=ctx.call.node_id,
            node_label=ctx.call.node_label,
            **fields,
        )

    if not categories or not text.strip():
        await ctx.record([checked(outcome="skipped")])
        return
    cred_id = data.get("guardrailCredentialId")
    model = data.get("guardrailModel")
    if not isinstance(cred_id, str) or not cred_id or not isinstance(model, str) or not model:
        raise AgentFailed(
            "Guardrails are on but no guardrail credential or model is configured "
            "(guardrailCredentialId, guardrailModel)",
            retryable=False,
        )
    try:
        cred = await ctx.credential(cred_id)
    except AgentFailed as exc:
        raise AgentFailed(f"Guardrails: {exc}", retryable=exc.retryable) from None
    messages = classification_messages(text, categories, severity)
    try:
        reply = await ctx.services.models.chat(
            cred, model=model, messages=messages, temperature=0, max_tokens=MAX_ANSWER_TOKENS
        )
    except ModelError as exc:
        await ctx.record(
            [checked(outcome="failed", error=str(exc), retryable=exc.retryable, model=model)]
        )
        return
    answer = str(reply.message.get("content") or "")
    trace = sanitize_trace_payload(
        {
            "request": {"messages": messages, "categories": categories, "severity": severity},
            "response": reply.message,
        }
    )
    common: dict[str, Any] = {
        "model": reply.model,
        "usage": reply.usage,
        "elapsed_ms": reply.elapsed_ms,
        "trace": trace,
    }
    try:
        violated = violated_categories(answer, categories)
    except UnusableVerdict as exc:
        await ctx.record([checked(outcome="failed", error=str(exc), **common)])
        return
    outcome = "violated" if violated else "passed"
    await ctx.record([checked(outcome=outcome, violated=violated, **common)])


def user_message(messages: list[dict[str, Any]]) -> str:
    """The resolved user message as the agent will send it (text parts joined)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
