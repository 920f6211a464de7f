"""The `request_human_review` tool: its schema and guidance (Heym §4.2), and the request a
call makes (`ReviewRequested`, with the §5.1 summary), planned from the invocation's fold."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from contracts.review import ReviewRequested
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import AgentState, call_id, tool_name
from services.agent_runtime.domain.review import (
    REVIEW_TOOL,
    active_approval,
    clip,
    decided_reviews,
    derive_summary,
    history_entry,
    review_arguments,
)
from services.agent_runtime.tools.spec import ToolSpec, object_schema

_REQUEST_NS = uuid.UUID("a3c1f0e2-5b7d-4e61-9f2a-0d8c6b4e2f17")

GUIDANCE = (
    "You can ask a human to review your work with the request_human_review tool. Call it "
    "before any step the guidelines say needs approval: put the complete draft (Markdown) in "
    "review_markdown, a one-line summary in summary and why approval is needed in reason. "
    "The run pauses until a reviewer accepts, edits or refuses. After an approval, treat the "
    "approved Markdown as the source of truth; after a refusal, stop."
)


def review_tool() -> ToolSpec:
    return ToolSpec(
        name=REVIEW_TOOL,
        source="hitl",
        description=(
            "Ask a human to review and approve a draft before a sensitive or irreversible "
            "action. The run pauses until the reviewer decides."
        ),
        parameters=object_schema(
            {
                "summary": {"type": "string", "description": "One line for the reviewer."},
                "review_markdown": {
                    "type": "string",
                    "description": "The complete draft to review, in Markdown.",
                },
                "reason": {"type": "string", "description": "Why approval is needed."},
            },
            ["review_markdown"],
        ),
    )


@dataclass(frozen=True)
class ReviewPlan:
    """What the fold says about reviews when a turn is planned."""

    checkpoint: int = 1
    history: list[dict[str, Any]] = field(default_factory=list)
    # After an edit: the approved text that further review calls are answered with.
    approved: str | None = None
    # MCP tools approved in `once` mode: their later calls need no approval (§5.2).
    approved_tools: frozenset[str] = frozenset()


def review_plan(state: AgentState) -> ReviewPlan:
    decided = decided_reviews(state)
    return ReviewPlan(
        checkpoint=len(state.reviews) + 1,
        history=[history_entry(r) for r in decided],
        approved=active_approval(state),
        approved_tools=frozenset(
            r.requested.tool_name
            for r in decided
            if r.requested.tool_source == "mcp"
            and r.requested.match_strategy == "tool_name"
            and r.decided is not None
            and r.decided.decision != "refused"
        ),
    )


def gated(spec: ToolSpec | None, plan: ReviewPlan) -> bool:
    """Whether a call of this tool must wait for a human's approval first (§5.2 gate)."""
    if spec is None or spec.source != "mcp":
        return False
    mode = spec.meta.get("approval")
    if mode == "always":
        return True
    return mode == "once" and spec.name not in plan.approved_tools


def gate_call(
    call: AgentCall,
    turn: int,
    tool_call: dict[str, Any],
    spec: ToolSpec,
    plan: ReviewPlan,
    *,
    now_ms: int,
) -> ReviewRequested:
    """The review a gated MCP call asks for, with its planned arguments (§5.2)."""
    function = tool_call.get("function")
    raw = function.get("arguments") if isinstance(function, dict) else None
    raw_text = raw if isinstance(raw, str) else json.dumps(raw or {})
    try:
        planned = json.dumps(json.loads(raw_text or "{}"), indent=2, sort_keys=True)
    except ValueError:
        planned = raw_text
    server = spec.meta.get("server")
    where = "MCP"
    if isinstance(server, dict):
        where = str(server.get("label") or server.get("id") or "MCP")
    draft = (
        "## Approval Required\n\n"
        f"The agent wants to call the MCP tool `{spec.name}` ({where}) with these planned "
        f"arguments:\n\n```json\n{planned}\n```"
    )
    once = spec.meta.get("approval") == "once"
    workflow = call.workflow
    return ReviewRequested(
        request_id=request_id(call.run_id, call.invocation_id, turn, call_id(tool_call)),
        invocation_id=call.invocation_id,
        turn=turn,
        tool_call_id=call_id(tool_call),
        checkpoint=plan.checkpoint,
        summary=clip(f"Approve the MCP call {spec.name}"),
        draft_text=draft,
        reason=f"{spec.name} needs approval ({spec.meta.get('approval')})",
        tool_name=spec.name,
        tool_source="mcp",
        tool_arguments=raw_text,
        match_strategy="tool_name" if once else "exact_args",
        workflow_id=call.workflow_id,
        workflow_name=workflow.name if workflow is not None else "",
        node_id=call.node_id,
        node_label=call.node_label,
        owner_id=call.owner_id,
        timeout_hours=timeout_hours(call.data.get("hitlTimeoutHours")),
        hitl_history=plan.history,
        requested_at_ms=now_ms,
        test_run=call.test_run,
    )


def request_id(run_id: str, invocation_id: str, turn: int, tool_call_id: str) -> str:
    return uuid.uuid5(_REQUEST_NS, f"{run_id}:{invocation_id}:{turn}:{tool_call_id}").hex


def review_call(
    call: AgentCall, turn: int, tool_call: dict[str, Any], plan: ReviewPlan, *, now_ms: int
) -> ReviewRequested:
    function = tool_call.get("function")
    raw = function.get("arguments") if isinstance(function, dict) else None
    raw_text = raw if isinstance(raw, str) else json.dumps(raw or {})
    try:
        args = json.loads(raw_text) if raw_text.strip() else {}
    except ValueError:
        args = {}
    markdown, reason, summary = review_arguments(args if isinstance(args, dict) else {})
    workflow = call.workflow
    return ReviewRequested(
        request_id=request_id(call.run_id, call.invocation_id, turn, call_id(tool_call)),
        invocation_id=call.invocation_id,
        turn=turn,
        tool_call_id=call_id(tool_call),
        checkpoint=plan.checkpoint,
        summary=derive_summary(summary, markdown, reason, call.node_label),
        draft_text=markdown,
        reason=reason,
        tool_name=tool_name(tool_call) or REVIEW_TOOL,
        tool_source="hitl",
        tool_arguments=raw_text,
        workflow_id=call.workflow_id,
        workflow_name=workflow.name if workflow is not None else "",
        node_id=call.node_id,
        node_label=call.node_label,
        owner_id=call.owner_id,
        timeout_hours=timeout_hours(call.data.get("hitlTimeoutHours")),
        hitl_history=plan.history,
        requested_at_ms=now_ms,
        test_run=call.test_run,
    )


def timeout_hours(raw: Any) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if 0 < value <= 24 * 365 else None
