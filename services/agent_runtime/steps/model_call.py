"""The model step: compress if the context is nearly full, ask the model, record the answer.

One answer is one append: the response (`agent.llm_call`), the results of the tool calls that
are computed here at once, and the list of calls handed to children (`agent.tools_dispatched`);
then the children are started. A failed request is recorded as `agent.model_call_failed` and
retried by the decider with back-off inside this invocation, so no earlier turn or tool is
repeated. The closing answer after the iteration limit (`grace`) is best-effort.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from contracts.agents import (
    ContextCompressed,
    LlmCallRecorded,
    ModelCallFailed,
    ToolCallsDispatched,
)
from contracts.base import Event
from libs.observability.redaction import sanitize_trace_payload
from services.agent_runtime import compression
from services.agent_runtime.domain import CallModel, GraceLimit
from services.agent_runtime.model import ModelError, ModelReply
from services.agent_runtime.prompts import response_format
from services.agent_runtime.steps.context import StepContext, now_ms
from services.agent_runtime.steps.review import after_plan, refuse_nested_review
from services.agent_runtime.tools.plan import ToolPlan, plan_tools
from services.agent_runtime.tools.review import review_plan
from services.agent_runtime.tools.spec import ToolSpec

LIMIT_TEXT = "Tool iteration limit reached."


async def call_model(ctx: StepContext, step: CallModel) -> None:
    if step.delay_s > 0:
        await asyncio.sleep(step.delay_s * random.uniform(1.0, 1.25))
    data = ctx.data
    cred_id = str(data.get("fallbackCredentialId") if step.fallback else data.get("credentialId"))
    model = str(data.get("fallbackModel") if step.fallback else data.get("model"))
    cred = await ctx.credential(cred_id)
    if not step.grace:
        await _maybe_compress(ctx, model, cred_id)
    messages = ctx.state.messages()
    if step.grace and (not messages or messages[-1].get("role") != "tool"):
        await ctx.record([_placeholder(ctx, messages, step.turn)])
        return
    specs = {} if step.grace else ctx.specs()
    try:
        reply = await ctx.services.models.chat(
            cred,
            model=model,
            messages=messages,
            tools=[s.schema() for s in specs.values()] or None,
            tool_choice="none" if step.grace else None,
            temperature=_float(data.get("temperature"), 0.7),
            max_tokens=_int(data.get("maxTokens"), 0) or None,
            reasoning_effort=data.get("reasoningEffort"),
            response_format=response_format(data),
        )
    except ModelError as exc:
        label = ctx.call.node_type.capitalize()
        await ctx.record(
            [
                ModelCallFailed(
                    turn=step.turn,
                    attempt=step.attempt,
                    error=str(exc) if step.fallback else f"{label} error: {exc}",
                    retryable=exc.retryable,
                    status_code=exc.status_code,
                    retry_after_s=exc.retry_after_s,
                    model=model,
                    fallback=step.fallback,
                )
            ]
        )
        return
    if step.grace and not (reply.message.get("content") or "").strip():
        await ctx.record([_placeholder(ctx, messages, step.turn)])
        return
    await _record_reply(ctx, step, reply, messages, specs)


async def grace_limit(ctx: StepContext, step: GraceLimit) -> None:
    await ctx.record([_placeholder(ctx, ctx.state.messages(), step.turn)])


async def _record_reply(
    ctx: StepContext,
    step: CallModel,
    reply: ModelReply,
    messages: list[dict[str, Any]],
    specs: dict[str, ToolSpec],
) -> None:
    llm = _llm_event(ctx, step, reply, messages)
    events: list[Event] = [llm]
    tool_calls = list(reply.message.get("tool_calls") or []) if not step.grace else []
    plan = ToolPlan()
    if tool_calls:
        now = now_ms()
        refuse_nested_review(ctx, tool_calls, specs)
        plan = plan_tools(
            ctx.call, step.turn, tool_calls, specs, now_ms=now, review=review_plan(ctx.state)
        )
        events.extend(plan.results)
        events.extend(plan.reviews)
        if plan.waiting:
            events.append(
                ToolCallsDispatched(turn=step.turn, calls=plan.waiting, dispatched_at_ms=now)
            )
    if not tool_calls:
        # A final answer: only the step that ends the invocation acts on it, and it records
        # first (the answer and the end are one append).
        await ctx.record_soon(events)
        return
    await ctx.record(events)
    await after_plan(ctx, plan)


def _llm_event(
    ctx: StepContext,
    step: CallModel,
    reply: ModelReply,
    messages: list[dict[str, Any]],
) -> LlmCallRecorded:
    state = ctx.state
    assert state.started is not None
    # The stored trace holds what this call added to the conversation (the first call: all
    # of it), so tracing a long loop costs O(n) in all rather than O(n) per call.
    seen = state.turns[-1].llm.request_messages + 1 if state.turns else 0
    new = messages[seen:] if 0 < seen <= len(messages) else messages
    trace = sanitize_trace_payload(
        {
            "request": {
                "messages": new,
                "messages_total": len(messages),
                "tools": [t["name"] for t in state.started.tools],
            },
            "response": reply.message,
        }
    )
    return LlmCallRecorded(
        turn=step.turn,
        node_id=state.started.node_id,
        node_label=state.started.node_label,
        model=reply.model,
        message=reply.message,
        finish_reason=reply.finish_reason,
        usage=reply.usage,
        elapsed_ms=reply.elapsed_ms,
        fallback_used=step.fallback,
        grace=step.grace,
        request_messages=len(messages),
        trace=trace,
        attempt=step.attempt,
    )


def _placeholder(ctx: StepContext, messages: list[dict[str, Any]], turn: int) -> LlmCallRecorded:
    state = ctx.state
    assert state.started is not None
    return LlmCallRecorded(
        turn=turn,
        node_id=state.started.node_id,
        node_label=state.started.node_label,
        model=str(ctx.data.get("model")),
        message={"role": "assistant", "content": LIMIT_TEXT},
        finish_reason="length",
        grace=True,
        request_messages=len(messages),
    )


async def _maybe_compress(ctx: StepContext, model: str, cred_id: str) -> None:
    state = ctx.state
    if ctx.call.node_type != "agent" or not state.turns:
        return
    cred = await ctx.credential(cred_id)
    models = ctx.services.models
    limit = await models.context_limit(cred, model)
    messages = state.messages()
    if compression.estimate_tokens(messages) < compression.THRESHOLD * limit:
        return  # the common case: no summariser to build
    _, info = await compression.compress(
        messages,
        model=model,
        limit=limit,
        summarize=compression.summarize_with_openai(models.client(cred), model),
    )
    if info is None:
        return
    await ctx.record(
        [
            ContextCompressed(
                turn=len(state.turns) + 1,
                node_id=ctx.call.node_id,
                node_label=ctx.call.node_label,
                summary=info.summary,
                first_user_index=info.first_user_index,
                tail_start_index=info.tail_start_index,
                messages_compressed=info.messages_compressed,
                messages_before_count=info.messages_before_count,
                messages_after_count=info.messages_after_count,
                tokens_before=info.tokens_before,
                tokens_after=info.tokens_after,
                elapsed_ms=info.elapsed_ms,
            )
        ]
    )


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _float(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default
