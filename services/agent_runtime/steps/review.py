"""The review steps: start the children and reviews a turn planned, report a pause up, and
apply a refusal (Heym §5.5).

An accepted or edited review needs no step: folding the decision answers the review call
(the approved Markdown, as the source of truth; `domain/review.decision_record`), so the
decider asks the model again at once with the remaining iterations. A refusal records the
call's result and ends the invocation at once with `decision: "refused"` and empty text.
"""

from __future__ import annotations

from typing import Any

from contracts.agents import AgentFinished, ToolCallsDispatched
from contracts.base import Event
from services.agent_runtime import review_effects
from services.agent_runtime.domain import ApplyDecision, Paused, Review, call_id, tool_name
from services.agent_runtime.domain.review import decision_fields, decision_record
from services.agent_runtime.result import agent_output
from services.agent_runtime.steps.context import AgentFailed, StepContext, now_ms
from services.agent_runtime.tools.plan import ToolPlan, plan_tools
from services.agent_runtime.tools.spec import ToolSpec

NESTED_REVIEW = "cannot pause for another human review"


def refuse_nested_review(
    ctx: StepContext, tool_calls: list[dict[str, Any]], specs: dict[str, ToolSpec]
) -> None:
    """A node on a paused agent's review branch may not pause for a review of its own."""
    if not ctx.call.review_branch:
        return
    for call in tool_calls:
        spec = specs.get(tool_name(call))
        if spec is not None and spec.source == "hitl":
            raise AgentFailed(
                f"{NESTED_REVIEW}: {ctx.call.node_label!r} runs on the review branch of a "
                "paused agent",
                retryable=False,
            )


async def after_plan(ctx: StepContext, plan: ToolPlan) -> None:
    """Once the turn is recorded: start its children, hand its review to the review service."""
    if plan.dispatches:
        await ctx.services.effects.dispatch(ctx.call, plan.dispatches)
    for requested in plan.reviews:
        review = ctx.state.reviews.get(requested.request_id)
        if review is not None:
            await review_effects.request_review(ctx.services.effects.log, ctx.call, review)


async def report_pause(ctx: StepContext, step: Paused) -> None:
    """Tell whoever waits for this invocation that it is paused (idempotent)."""
    if step.payload is None:
        return
    state = ctx.state
    started = state.started.started_at_ms if state.started else state.requested_at_ms
    await review_effects.report_pause(
        ctx.services.effects.log, ctx.call, step.request_id, step.payload, started_at_ms=started
    )


async def resend_review(ctx: StepContext, step: Paused) -> None:
    """After a reload: the review service may not have the request yet (idempotent)."""
    review = ctx.state.reviews.get(step.request_id)
    if step.own and review is not None and review.opened is None:
        await review_effects.request_review(ctx.services.effects.log, ctx.call, review)


async def apply_decision(ctx: StepContext, step: ApplyDecision) -> None:
    state = ctx.state
    review = state.reviews[step.request_id]
    decided = review.decided
    assert decided is not None
    if review.requested.tool_source == "mcp" and decided.decision != "refused":
        await _run_approved(ctx, review)
        return
    events: list[Event] = [decision_record(review)]
    refused = decided.decision == "refused"
    if refused:
        events.append(
            AgentFinished(status="success", output=_refused_output(ctx), finished_at_ms=now_ms())
        )
    await ctx.record(events)
    if refused:
        await ctx.services.effects.deliver(ctx.call, ctx.state)


async def _run_approved(ctx: StepContext, review: Review) -> None:
    """An approved MCP call runs now, exactly as planned (its arguments were reviewed)."""
    r = review.requested
    turn = ctx.state.turns[r.turn - 1]
    tool_call = next(c for c in turn.tool_calls if call_id(c) == r.tool_call_id)
    now = now_ms()
    plan = plan_tools(ctx.call, r.turn, [tool_call], ctx.specs(), now_ms=now)
    events: list[Event] = [*plan.results]
    if plan.dispatches:
        events.append(
            ToolCallsDispatched(
                turn=r.turn, calls=[d.call for d in plan.dispatches], dispatched_at_ms=now
            )
        )
    await ctx.record(events)
    await after_plan(ctx, plan)


def _refused_output(ctx: StepContext) -> dict[str, Any]:
    state = ctx.state
    model = state.turns[-1].llm.model if state.turns else str(ctx.data.get("model") or "")
    output = agent_output(state, "", model=model, parsed=None)
    output.update(decision_fields(state))
    return output
