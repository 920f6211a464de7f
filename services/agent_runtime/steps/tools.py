"""The tools step for calls not yet handled (a turn recorded by an earlier build, or one whose
dispatch record was lost): compute what is computed here, hand the rest to children."""

from __future__ import annotations

from contracts.agents import ToolCallsDispatched
from contracts.base import Event
from services.agent_runtime.domain import RunTools
from services.agent_runtime.steps.context import StepContext, now_ms
from services.agent_runtime.tools.plan import plan_tools


async def run_tools(ctx: StepContext, step: RunTools) -> None:
    now = now_ms()
    plan = plan_tools(ctx.call, step.turn, step.calls, ctx.specs(), now_ms=now)
    events: list[Event] = list(plan.results)
    if plan.dispatches:
        events.append(
            ToolCallsDispatched(
                turn=step.turn, calls=[d.call for d in plan.dispatches], dispatched_at_ms=now
            )
        )
    await ctx.record(events)
    if plan.dispatches:
        await ctx.services.effects.dispatch(ctx.call, plan.dispatches)
