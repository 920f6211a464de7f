"""Tool routing (the seed's Orchestrator Tool Executor): each tool call of a turn becomes either
a result computed here at once, or a dispatch to the aggregate that runs it.

Here, at once: canvas nodes the runtime evaluates itself (generic pure nodes), calls that are
refused (unknown tool, malformed arguments, a limit reached). A `request_human_review` call
becomes a `ReviewRequested` recorded with the turn, and the invocation pauses; the turn's other
calls are not run (Heym runs the review first and drops the rest). Elsewhere, by one event
each: sub-agents (their own aggregate), sub-workflows (a child run through the scheduler), and
the tool sandbox's sources (python, skill, mcp, canvas `http` nodes). A planned dispatch is
deterministic for a given call and clock, so a runtime that re-drives after a crash re-sends
the same events (each is idempotent).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from contracts.agents import DispatchedCall, ToolCallRecorded
from contracts.base import Event
from contracts.review import ReviewRequested
from contracts.runs import RunRequested
from libs import telemetry
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import call_id, tool_name
from services.agent_runtime.tools import delegation
from services.agent_runtime.tools.local import run_local_node
from services.agent_runtime.tools.review import ReviewPlan, gate_call, gated, review_call
from services.agent_runtime.tools.spec import ToolOutcome, ToolSpec


@dataclass(frozen=True)
class Dispatch:
    """One event that starts a tool call elsewhere: appended to `subject`, expected empty."""

    call: DispatchedCall
    subject: str
    event: Event
    message_id: str
    # The message's `traceparent`: the tool call's span (a child run: the run's own span).
    traceparent: str | None = None


@dataclass
class ToolPlan:
    results: list[ToolCallRecorded] = field(default_factory=list)
    dispatches: list[Dispatch] = field(default_factory=list)
    # A review the turn asks for (recorded with the turn; its call waits for the decision).
    reviews: list[ReviewRequested] = field(default_factory=list)

    @property
    def waiting(self) -> list[DispatchedCall]:
        """Every call of the turn that someone else answers later."""
        held = [
            DispatchedCall(
                tool_call_id=r.tool_call_id, name=r.tool_name, source="hitl", target=r.request_id
            )
            for r in self.reviews
        ]
        return [d.call for d in self.dispatches] + held


def plan_tools(
    call: AgentCall,
    turn: int,
    tool_calls: list[dict[str, Any]],
    specs: dict[str, ToolSpec],
    *,
    now_ms: int,
    review: ReviewPlan | None = None,
) -> ToolPlan:
    plan = ToolPlan()
    asked = _review_asked(call, turn, tool_calls, specs, review, now_ms=now_ms)
    if isinstance(asked, ReviewRequested):
        plan.reviews.append(asked)
    for tool_call in tool_calls:
        started = time.perf_counter()
        outcome: ToolOutcome | Dispatch
        if isinstance(asked, ReviewRequested) and call_id(tool_call) == asked.tool_call_id:
            continue
        spec = specs.get(tool_name(tool_call))
        is_review = spec is not None and spec.source == "hitl"
        if review is not None and (
            isinstance(asked, ReviewRequested) or (asked is not None and is_review)
        ):
            outcome = _beside_review(tool_call, specs, asked, review)
        else:
            outcome = _route(call, turn, tool_call, specs, now_ms=now_ms)
        if isinstance(outcome, Dispatch):
            plan.dispatches.append(outcome)
            continue
        plan.results.append(
            record(
                call,
                turn,
                tool_call,
                specs,
                outcome,
                started_at_ms=now_ms,
                elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        )
    return plan


def _review_asked(
    call: AgentCall,
    turn: int,
    tool_calls: list[dict[str, Any]],
    specs: dict[str, ToolSpec],
    review: ReviewPlan | None,
    *,
    now_ms: int,
) -> ReviewRequested | str | None:
    """The turn's first review call, as the request it makes; its id when it is answered at
    once instead (already approved, bad arguments); None when the turn asks for no review."""
    if review is None:
        return None
    for tool_call in tool_calls:
        spec = specs.get(tool_name(tool_call))
        if spec is not None and spec.source == "hitl":
            if review.approved is not None:
                return call_id(tool_call)
            return review_call(call, turn, tool_call, review, now_ms=now_ms)
        if spec is not None and gated(spec, review):
            # an MCP call the policy gates pauses with its planned arguments (§5.2)
            return gate_call(call, turn, tool_call, spec, review, now_ms=now_ms)
    return None


def _beside_review(
    tool_call: dict[str, Any],
    specs: dict[str, ToolSpec],
    asked: ReviewRequested | str | None,
    review: ReviewPlan,
) -> ToolOutcome:
    """Calls made in the same turn as a review request: the first review call answered at
    once after an edit, a second review call, or another tool (not run before the review)."""
    spec = specs.get(tool_name(tool_call))
    if isinstance(asked, str) and call_id(tool_call) == asked:
        return ToolOutcome(
            result={"status": "already_approved", "approved_markdown": review.approved}
        )
    if spec is not None and spec.source == "hitl":
        return ToolOutcome.error("only one human review can be requested per turn")
    return ToolOutcome.error(
        "not run: a human review was requested in the same turn; call this tool again after "
        "the review if it is still needed",
        status="cancelled",
    )


def record(
    call: AgentCall,
    turn: int,
    tool_call: dict[str, Any],
    specs: dict[str, ToolSpec],
    outcome: ToolOutcome,
    *,
    started_at_ms: int,
    elapsed_ms: float,
) -> ToolCallRecorded:
    name = tool_name(tool_call)
    spec = specs.get(name)
    return ToolCallRecorded(
        turn=turn,
        node_id=call.node_id,
        node_label=call.node_label,
        tool_call_id=call_id(tool_call),
        name=name,
        source=spec.source if spec else "unknown",
        arguments=raw_arguments(tool_call),
        result=outcome.result,
        status=outcome.status,
        started_at_ms=started_at_ms,
        finished_at_ms=started_at_ms + int(elapsed_ms),
        elapsed_ms=elapsed_ms,
        extra=outcome.extra,
    )


def raw_arguments(tool_call: dict[str, Any]) -> str:
    function = tool_call.get("function")
    raw = function.get("arguments") if isinstance(function, dict) else None
    return raw if isinstance(raw, str) else json.dumps(raw or {})


def _route(
    call: AgentCall,
    turn: int,
    tool_call: dict[str, Any],
    specs: dict[str, ToolSpec],
    *,
    now_ms: int,
) -> ToolOutcome | Dispatch:
    name = tool_name(tool_call)
    spec = specs.get(name)
    if spec is None:
        return ToolOutcome.error(f"Unknown tool: {name}")
    raw = raw_arguments(tool_call)
    try:
        args = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return ToolOutcome.error(f"Invalid JSON arguments for {name}: {exc}")
    if not isinstance(args, dict):
        return ToolOutcome.error(f"Arguments for {name} must be a JSON object")
    cid = call_id(tool_call)
    try:
        if spec.source == "hitl":
            return ToolOutcome.error("human review is not available here")
        if spec.source == "node_tool":
            local = run_local_node(call, spec.meta["node"], args)
            if local is not None:
                return local
        target = delegation.dispatch_for(call, turn, cid, spec, args, now_ms=now_ms)
    except Exception as exc:  # a tool's failure is a result the model sees, never a crash
        return ToolOutcome.error(f"{type(exc).__name__}: {exc}")
    if isinstance(target, ToolOutcome):
        return target
    subject, event, message_id, target_id = target
    if isinstance(event, RunRequested):
        header = event.run_traceparent
    else:
        header = telemetry.header_of(
            telemetry.tool_context(call.trace, call.run_id, call.invocation_id, cid)
        )
    return Dispatch(
        call=DispatchedCall(tool_call_id=cid, name=name, source=spec.source, target=target_id),
        subject=subject,
        event=event,
        message_id=message_id,
        traceparent=header,
    )
