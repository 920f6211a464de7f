"""`AgentCall`: the invocation's context (node, inputs, workflow, parent), read off its request.

Built from the first event of the aggregate (`agent.requested` from a scheduler dispatch, or
`agent.sub_agent_dispatched` from an orchestrator), so every step on every replica works
from the same recorded context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contracts.agents import AgentRequested, SubAgentDispatched
from contracts.runs import WorkflowSnapshot
from libs import telemetry
from libs.expressions import ExpressionContext, build_context
from services.agent_runtime.domain import Request

MAX_SUB_AGENT_DEPTH = 5


@dataclass
class AgentCall:
    run_id: str
    invocation_id: str
    node_id: str
    node_label: str
    node_type: str
    node: dict[str, Any]
    inputs: dict[str, Any]
    upstream: dict[str, Any]
    vars: dict[str, Any]
    owner_id: str
    workflow_id: str
    workflow: WorkflowSnapshot | None
    sub_workflows: dict[str, WorkflowSnapshot]
    attempt: int
    dispatched_at_ms: int
    timezone: str = "UTC"
    # This invocation's own span (`heym.node.execute`, id derived from run and invocation),
    # carried by everything it appends; `parent_traceparent` is the span its request named
    # (the run span, or for a sub-agent the orchestrator's `call_sub_agent` tool span).
    traceparent: str | None = None
    parent_traceparent: str | None = None
    run_depth: int = 0
    agent_depth: int = 0
    trigger_source: str = "API"
    test_run: bool = False
    parent_invocation_id: str | None = None
    parent_tool_call_id: str = ""
    parent_turn: int = 0
    parent_node_id: str = ""
    parent_node_label: str = ""
    globals: dict[str, Any] = field(default_factory=dict)
    correlation_id: str | None = None
    review_branch: bool = False
    _ctx: ExpressionContext | None = field(default=None, repr=False)

    @property
    def data(self) -> dict[str, Any]:
        raw = self.node.get("data")
        return dict(raw) if isinstance(raw, dict) else {}

    @property
    def ctx(self) -> ExpressionContext:
        if self._ctx is None:
            self._ctx = build_context(
                self.inputs,
                self.upstream,
                vars=self.vars,
                global_vars=self.globals,
                now=datetime.fromtimestamp(self.dispatched_at_ms / 1000, UTC),
                timezone=self.timezone or "UTC",
            )
        return self._ctx

    @property
    def trace(self) -> telemetry.TraceContext | None:
        return telemetry.TraceContext.parse(self.traceparent)

    @classmethod
    def from_request(
        cls, run_id: str, request: Request, *, requested_at_ms: int, traceparent: str | None
    ) -> AgentCall:
        """`traceparent`: the request's (its envelope's) context, the invocation's parent."""
        call = cls._from_request(run_id, request, requested_at_ms, traceparent)
        own = telemetry.node_context(
            telemetry.TraceContext.parse(traceparent), run_id, call.invocation_id
        )
        call.traceparent = telemetry.header_of(own)
        call.parent_traceparent = traceparent
        return call

    @classmethod
    def _from_request(
        cls, run_id: str, request: Request, requested_at_ms: int, traceparent: str | None
    ) -> AgentCall:
        if isinstance(request, AgentRequested):
            return cls(
                run_id=run_id,
                invocation_id=request.invocation_id,
                node_id=request.node_id,
                node_label=request.node_label,
                node_type=request.node_type,
                node=request.node,
                inputs=request.inputs,
                upstream=request.upstream,
                vars=request.vars,
                owner_id=request.owner_id,
                workflow_id=request.workflow_id,
                workflow=request.workflow,
                sub_workflows=request.sub_workflows,
                attempt=request.attempt,
                dispatched_at_ms=request.dispatched_at_ms or requested_at_ms,
                timezone=request.timezone,
                traceparent=traceparent,
                run_depth=request.depth,
                trigger_source=request.trigger_source,
                test_run=request.test_run,
                globals=request.globals,
                correlation_id=run_id,
                review_branch=request.review_branch,
            )
        return cls._from_sub_agent(run_id, request, requested_at_ms, traceparent)

    @classmethod
    def _from_sub_agent(
        cls, run_id: str, ev: SubAgentDispatched, requested_at_ms: int, traceparent: str | None
    ) -> AgentCall:
        synthetic = {"input": {"text": ev.prompt, "body": {"text": ev.prompt}}}
        return cls(
            run_id=run_id,
            invocation_id=ev.invocation_id,
            node_id=ev.node_id,
            node_label=ev.node_label,
            node_type="agent",
            node=ev.node,
            inputs=synthetic,
            upstream=ev.upstream,
            vars=ev.vars,
            owner_id=ev.owner_id,
            workflow_id=ev.workflow_id,
            workflow=ev.workflow,
            sub_workflows=ev.sub_workflows,
            attempt=1,
            dispatched_at_ms=requested_at_ms,
            timezone=ev.timezone,
            traceparent=traceparent,
            run_depth=ev.run_depth,
            agent_depth=ev.depth,
            trigger_source=ev.trigger_source,
            test_run=ev.test_run,
            parent_invocation_id=ev.parent_invocation_id,
            parent_tool_call_id=ev.tool_call_id,
            parent_turn=ev.turn,
            parent_node_id=ev.parent_node_id,
            parent_node_label=ev.parent_node_label,
            globals=ev.globals,
            correlation_id=run_id,
            review_branch=ev.review_branch,
        )
