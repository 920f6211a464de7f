"""The first step: assemble the prompt and the tools (Heym §4.2) and record them."""

from __future__ import annotations

from typing import Any

from contracts.agents import AgentStarted
from services.agent_runtime.prompts import PromptError, build_messages, skills_prefix
from services.agent_runtime.steps.context import AgentFailed, StepContext, now_ms
from services.agent_runtime.tools.catalog import build_tools


async def start(ctx: StepContext) -> None:
    call = ctx.call
    data = call.data
    if not data.get("model") or not data.get("credentialId"):
        raise AgentFailed("No credential or model configured", retryable=False)
    if data.get("jsonOutputEnabled") and data.get("hitlEnabled"):
        raise AgentFailed("JSON output cannot be combined with human review", retryable=False)
    try:
        messages = build_messages(call, skills_text=skills_prefix(data))
    except PromptError as exc:
        raise AgentFailed(str(exc), retryable=False) from None
    tools = [] if call.node_type == "llm" else build_tools(call)
    await ctx.record(
        [
            AgentStarted(
                invocation_id=call.invocation_id,
                node_id=call.node_id,
                node_label=call.node_label,
                node_type=call.node_type,
                model=str(data.get("model")),
                credential_id=str(data.get("credentialId")),
                messages=messages,
                tools=[
                    {
                        "name": t.name,
                        "source": t.source,
                        "description": t.description,
                        "parameters": t.parameters,
                        "meta": t.meta,
                    }
                    for t in tools
                ],
                max_tool_iterations=_int(data.get("maxToolIterations"), 30),
                depth=call.agent_depth,
                started_at_ms=now_ms(),
            )
        ]
    )


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
