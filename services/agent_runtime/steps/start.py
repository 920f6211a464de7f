"""The first step: assemble the prompt and the tools (Heym §4.2) and record them.

Memory (§7) is read here, once: the graphs go into the system prompt and the graphs the run
may write afterwards into `agent.started`, so a replay never reads the read model again."""

from __future__ import annotations

import logging
from typing import Any

from contracts.agents import AgentStarted
from services.agent_runtime.memory.context import MemoryPrompt
from services.agent_runtime.memory.prompt import with_memory
from services.agent_runtime.prompts import PromptError, build_messages, skills_prefix
from services.agent_runtime.steps.context import AgentFailed, StepContext, now_ms
from services.agent_runtime.tools.approval import gate_mcp_tools
from services.agent_runtime.tools.catalog import build_tools

log = logging.getLogger(__name__)


async def start(ctx: StepContext) -> None:
    call = ctx.call
    data = call.data
    if not data.get("model") or not data.get("credentialId"):
        raise AgentFailed("No credential or model configured", retryable=False)
    if data.get("jsonOutputEnabled") and data.get("hitlEnabled"):
        raise AgentFailed("JSON output cannot be combined with human review", retryable=False)
    prepared = None
    if ctx.services.tools is not None and call.node_type != "llm":
        # stored skills (`{id}`) filled in, MCP servers listed (a failing one is skipped)
        prepared = await ctx.services.tools.prepare(
            call.owner_id, data, default_timeout_s=_float(data.get("toolTimeoutSeconds"), 30.0)
        )
        for problem in prepared.problems:
            log.warning("agent %s: %s", call.node_label, problem)
        data = {**data, "skills": prepared.skills}
    try:
        messages = build_messages(call, skills_text=skills_prefix(data))
    except PromptError as exc:
        raise AgentFailed(str(exc), retryable=False) from None
    tools = (
        []
        if call.node_type == "llm"
        else build_tools(
            call,
            skills=data.get("skills"),
            mcp_tools=prepared.mcp_tools if prepared is not None else [],
        )
    )
    gate_mcp_tools(data, tools, messages)  # HITL + MCP: which calls a human approves first
    reader = ctx.services.memory
    memory = await reader.prompt(call) if reader is not None else MemoryPrompt()
    messages = with_memory(messages, memory.blocks)
    # Only the next step (a guardrail check or the first model call) acts on this: it goes
    # into that step's append.
    await ctx.record_soon(
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
                mcp_list_ms=prepared.mcp_list_ms if prepared is not None else 0.0,
                memory=memory.targets,
            )
        ]
    )


def _float(value: Any, default: float) -> float:
    try:
        return float(value) if value else default
    except (TypeError, ValueError):
        return default


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
