"""The tools step for calls not yet handled (a turn recorded by an earlier build, or one whose
dispatch record was lost): compute what is computed here, hand the rest to children."""

from __future__ import annotations

from contracts.agents import ToolCallsDispatched
from contracts.base import Event
from services.agent_runtime.domain import RunTools
from services.agent_runtime.steps.context import StepContext, now_ms
from services.agent_runtime.steps.review import after_plan, refuse_nested_review
from services.agent_runtime.tools.plan import plan_tools
from services.agent_runtime.tools.review import review_plan


async def run_tools(ctx: StepContext, step: RunTools) -> None:
    now = now_ms()
    specs = ctx.specs()
    refuse_nested_review(ctx, step.calls, specs)
    plan = plan_tools(
        ctx.call, step.turn, step.calls, specs, now_ms=now, review=review_plan(ctx.state)
    )
    events: list[Event] = [*plan.results, *plan.reviews]
    if plan.waiting:
        events.append(ToolCallsDispatched(turn=step.turn, calls=plan.waiting, dispatched_at_ms=now))
    await ctx.record(events)
    await after_plan(ctx, plan)
