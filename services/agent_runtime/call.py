"""`AgentCall`: one agent or llm invocation to run (from a dispatch or a sub-agent call)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contracts.agents import SubAgentDispatched
from contracts.base import Envelope
from contracts.nodes import NodeDispatched
from contracts.runs import WorkflowSnapshot
from libs.expressions import ExpressionContext, build_context

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
    traceparent: str | None = None
    run_depth: int = 0
    agent_depth: int = 0
    trigger_source: str = "API"
    parent_invocation_id: str | None = None
    correlation_id: str | None = None
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
                now=datetime.fromtimestamp(self.dispatched_at_ms / 1000, UTC),
                timezone=self.timezone or "UTC",
            )
        return self._ctx

    @classmethod
    def from_dispatch(cls, env: Envelope, ev: NodeDispatched) -> AgentCall:
        return cls(
            run_id=env.run_id,
            invocation_id=ev.invocation_id,
            node_id=ev.node_id,
            node_label=ev.node_label,
            node_type=ev.node_type,
            node=ev.node,
            inputs=ev.inputs,
            upstream=ev.upstream,
            vars=ev.vars,
            owner_id=ev.owner_id,
            workflow_id=ev.workflow_id,
            workflow=ev.workflow,
            sub_workflows=ev.sub_workflows,
            attempt=ev.attempt,
            dispatched_at_ms=ev.dispatched_at_ms,
            timezone=ev.timezone,
            traceparent=env.traceparent,
            run_depth=ev.depth,
            trigger_source=ev.trigger_source,
            correlation_id=env.correlation_id or env.run_id,
        )

    @classmethod
    def from_sub_agent(
        cls, env: Envelope, ev: SubAgentDispatched, parent: AgentCall | None = None
    ) -> AgentCall:
        synthetic = {"input": {"text": ev.prompt, "body": {"text": ev.prompt}}}
        return cls(
            run_id=env.run_id,
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
            dispatched_at_ms=int(env.recorded_at.timestamp() * 1000),
            timezone=ev.timezone,
            traceparent=env.traceparent,
            run_depth=ev.run_depth,
            agent_depth=ev.depth,
            trigger_source=ev.trigger_source,
            parent_invocation_id=ev.parent_invocation_id,
            correlation_id=env.correlation_id or env.run_id,
        )
