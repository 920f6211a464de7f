"""The agent's steps, one module per kind; `perform` runs the one the decider chose."""

from __future__ import annotations

from services.agent_runtime.domain import (
    ApplyDecision,
    CallModel,
    Cancel,
    Classify,
    Fail,
    Finish,
    GraceLimit,
    RunTools,
    Start,
    Step,
)
from services.agent_runtime.steps.classify import classify
from services.agent_runtime.steps.context import (
    AgentFailed,
    Services,
    StepContext,
    now_ms,
)
from services.agent_runtime.steps.ending import cancel, fail, fail_with, finish
from services.agent_runtime.steps.model_call import LIMIT_TEXT, call_model, grace_limit
from services.agent_runtime.steps.review import apply_decision, report_pause, resend_review
from services.agent_runtime.steps.start import start
from services.agent_runtime.steps.tools import run_tools


async def perform(ctx: StepContext, step: Step) -> None:
    """Run one step. A step that cannot go on ends the invocation with its error."""
    try:
        if isinstance(step, Start):
            await start(ctx)
        elif isinstance(step, Classify):
            await classify(ctx)
        elif isinstance(step, CallModel):
            await call_model(ctx, step)
        elif isinstance(step, GraceLimit):
            await grace_limit(ctx, step)
        elif isinstance(step, RunTools):
            await run_tools(ctx, step)
        elif isinstance(step, Finish):
            await finish(ctx, step)
        elif isinstance(step, Fail):
            await fail(ctx, step)
        elif isinstance(step, Cancel):
            await cancel(ctx, step)
        elif isinstance(step, ApplyDecision):
            await apply_decision(ctx, step)
        else:
            raise TypeError(f"not an executable step: {step!r}")
    except AgentFailed as exc:
        await fail_with(ctx, str(exc), retryable=exc.retryable)


__all__ = [
    "LIMIT_TEXT",
    "AgentFailed",
    "Services",
    "StepContext",
    "fail_with",
    "now_ms",
    "perform",
    "report_pause",
    "resend_review",
]
