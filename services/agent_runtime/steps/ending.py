"""The last steps: finish with the output (Heym §4.8), fail with an error, or stop on a cancel.

Each records `agent.finished` on the invocation's subject, then delivers the result; a cancel
also ends the calls still running (recorded as `cancelled`) and passes the cancel to children.
"""

from __future__ import annotations

import json
from typing import Any

from contracts.agents import AgentFinished, LlmCallRecorded, ToolCallRecorded
from contracts.base import Event
from services.agent_runtime.domain import Cancel, Fail, Finish, call_id
from services.agent_runtime.domain.review import decision_fields
from services.agent_runtime.result import agent_output
from services.agent_runtime.steps.context import StepContext, now_ms
from services.agent_runtime.tools.plan import raw_arguments
from services.agent_runtime.tools.spec import ToolSpec


async def finish(ctx: StepContext, step: Finish) -> None:
    llm = ctx.state.turns[step.turn - 1].llm
    await ctx.record(
        [AgentFinished(status="success", output=_output(ctx, llm), finished_at_ms=now_ms())]
    )
    await ctx.services.effects.deliver(ctx.call, ctx.state)
    await ctx.services.effects.request_extraction(ctx.call, ctx.state)  # after the answer


async def fail(ctx: StepContext, step: Fail) -> None:
    await fail_with(ctx, step.error, retryable=step.retryable)


async def fail_with(ctx: StepContext, error: str, *, retryable: bool) -> None:
    output = {"text": "", "model": ctx.data.get("model"), "error": error}
    await ctx.record(
        [
            AgentFinished(
                status="error",
                output=output,
                error=error,
                retryable=retryable,
                finished_at_ms=now_ms(),
            )
        ]
    )
    await ctx.services.effects.deliver(ctx.call, ctx.state)


async def cancel(ctx: StepContext, step: Cancel) -> None:
    now = now_ms()
    specs: dict[str, ToolSpec] = ctx.specs() if ctx.state.started is not None else {}
    events: list[Event] = []
    for turn, tool_call in step.pending:
        function = tool_call.get("function") or {}
        name = str(function.get("name", ""))
        spec = specs.get(name)
        events.append(
            ToolCallRecorded(
                turn=turn,
                node_id=ctx.call.node_id,
                node_label=ctx.call.node_label,
                tool_call_id=call_id(tool_call),
                name=name,
                source=spec.source if spec else "unknown",
                arguments=raw_arguments(tool_call),
                result={"error": f"cancelled: {step.reason}"},
                status="cancelled",
                started_at_ms=now,
                finished_at_ms=now,
                elapsed_ms=0.0,
            )
        )
    error = f"cancelled: {step.reason}"
    events.append(
        AgentFinished(
            status="cancelled",
            output={"text": "", "model": ctx.data.get("model"), "error": error},
            error=error,
            finished_at_ms=now,
        )
    )
    await ctx.record(events)
    await ctx.services.effects.cancel_children(ctx.call, step.dispatched, step.reason)
    await ctx.services.effects.deliver(ctx.call, ctx.state)


def _output(ctx: StepContext, llm: LlmCallRecorded) -> dict[str, Any]:
    text = llm.message.get("content") or llm.message.get("reasoning") or ""
    parsed: dict[str, Any] | None = None
    if ctx.data.get("jsonOutputEnabled"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if value is not None:
            parsed = value if isinstance(value, dict) else {"value": value}
    if ctx.call.node_type == "llm":
        return _llm_output(text, llm, parsed)
    output = agent_output(ctx.state, text, model=llm.model, parsed=parsed)
    output.update(decision_fields(ctx.state))  # after a human review (Heym §4.8)
    return output


def _llm_output(text: str, llm: LlmCallRecorded, parsed: dict[str, Any] | None) -> dict[str, Any]:
    if parsed is not None:
        out = dict(parsed)
        out["model"] = llm.model
        out["fallbackUsed"] = llm.fallback_used
        return out
    completion = llm.usage.get("completion_tokens", 0)
    seconds = llm.elapsed_ms / 1000 if llm.elapsed_ms else 0.0
    return {
        "text": text,
        "model": llm.model,
        "usage": dict(llm.usage),
        "tokens_per_sec": round(completion / seconds, 2) if seconds else 0.0,
        "elapsed_ms": llm.elapsed_ms,
        **({"fallbackUsed": True} if llm.fallback_used else {}),
    }
