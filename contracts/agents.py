"""Agent events: one agent (or llm) invocation's history on `heym.run.<run>.node.<invocation>`.

The loop is event-sourced: every model response and every tool result is appended here before
it is used, so a runtime that restarts replays the invocation and continues without repeating
a model call or a tool call that is already recorded.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.base import Event
from contracts.runs import WorkflowSnapshot

ToolStatus = Literal["success", "error", "pending", "timeout", "cancelled"]


class AgentStarted(Event, tag="agent.started", frozen=True):
    """The prepared conversation and tools (prompt assembly is recorded, not redone)."""

    invocation_id: str
    node_id: str
    node_label: str
    node_type: str = "agent"
    model: str = ""
    credential_id: str | None = None
    messages: list[dict[str, Any]] = msgspec.field(default_factory=list)
    tools: list[dict[str, Any]] = msgspec.field(default_factory=list)
    max_tool_iterations: int = 30
    depth: int = 0
    started_at_ms: int = 0


class LlmCallRecorded(Event, tag="agent.llm_call", frozen=True):
    """One model response, recorded before anything acts on it."""

    turn: int
    model: str
    message: dict[str, Any]
    finish_reason: str | None = None
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    elapsed_ms: float = 0.0
    fallback_used: bool = False
    grace: bool = False
    request_messages: int = 0
    # The stored (redacted, size-bounded) copy of the request and response for the LLM trace;
    # the loop itself works from the full record.
    trace: dict[str, Any] = msgspec.field(default_factory=dict)
    node_id: str = ""
    node_label: str = ""


class ToolCallRecorded(Event, tag="agent.tool_result", frozen=True):
    """One tool call's result; the model receives it as a `tool` message in call order."""

    turn: int
    tool_call_id: str
    name: str
    source: str
    arguments: str
    result: Any
    status: ToolStatus
    started_at_ms: int
    finished_at_ms: int
    elapsed_ms: float
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    node_id: str = ""
    node_label: str = ""


class ContextCompressed(Event, tag="agent.context_compressed", frozen=True):
    """The middle of the conversation was replaced by a summary (Heym §4.7)."""

    turn: int
    summary: str
    first_user_index: int
    tail_start_index: int
    messages_compressed: int
    messages_before_count: int
    messages_after_count: int
    tokens_before: int
    tokens_after: int
    elapsed_ms: float
    node_id: str = ""
    node_label: str = ""


class SubAgentDispatched(Event, tag="agent.sub_agent_dispatched", frozen=True):
    """An orchestrator's `call_sub_agent` became a sub-agent invocation (its own aggregate),
    dispatched on its own message so another runtime replica may take it."""

    invocation_id: str
    parent_invocation_id: str
    tool_call_id: str
    node_id: str
    node_label: str
    prompt: str
    depth: int
    node: dict[str, Any] = msgspec.field(default_factory=dict)
    upstream: dict[str, Any] = msgspec.field(default_factory=dict)
    vars: dict[str, Any] = msgspec.field(default_factory=dict)
    workflow_id: str = ""
    owner_id: str = ""
    timezone: str = "UTC"
    workflow: WorkflowSnapshot | None = None
    sub_workflows: dict[str, WorkflowSnapshot] = msgspec.field(default_factory=dict)
    run_depth: int = 0
    trigger_source: str = "API"


class NodeToolDispatched(Event, tag="agent.node_tool_dispatched", frozen=True):
    """A canvas node wired to an agent's `tool-input` runs once as a tool, by its own executor."""

    invocation_id: str
    parent_invocation_id: str
    tool_call_id: str
    node_id: str
    node_label: str
    node_type: str
    node: dict[str, Any] = msgspec.field(default_factory=dict)
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    upstream: dict[str, Any] = msgspec.field(default_factory=dict)
    vars: dict[str, Any] = msgspec.field(default_factory=dict)
    idempotency_key: str = ""


AGENT_EVENTS: tuple[type[Event], ...] = (
    AgentStarted,
    LlmCallRecorded,
    ToolCallRecorded,
    ContextCompressed,
    SubAgentDispatched,
    NodeToolDispatched,
)
