"""Tool routing (the seed's Orchestrator Tool Executor): each tool call of a turn becomes either
a result computed here at once, or a dispatch to the aggregate that runs it.

Here, at once: canvas nodes the runtime evaluates itself (generic pure nodes), calls that are
refused (unknown tool, malformed arguments, a limit reached) and the review tool until it is
enabled. Elsewhere, by one event each: sub-agents (their own aggregate), sub-workflows (a
child run through the scheduler), and the tool sandbox's sources (python, skill, mcp, canvas
`http` nodes). A planned dispatch is deterministic for a given call and clock, so a runtime
that re-drives after a crash re-sends the same events (each is idempotent).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from contracts.agents import DispatchedCall, ToolCallRecorded
from contracts.base import Event
from contracts.runs import RunRequested
from libs import telemetry
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import call_id, tool_name
from services.agent_runtime.tools import delegation
from services.agent_runtime.tools.local import run_local_node
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


def plan_tools(
    call: AgentCall,
    turn: int,
    tool_calls: list[dict[str, Any]],
    specs: dict[str, ToolSpec],
    *,
    now_ms: int,
) -> ToolPlan:
    plan = ToolPlan()
    for tool_call in tool_calls:
        started = time.perf_counter()
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
            return ToolOutcome.error("human review is not enabled in this deployment yet")
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
