"""Agent events: one agent (or llm) invocation's history on `heym.agent.<run>.<invocation>`.

The agent is a reactive decider: every step (its request, each model response, each tool
dispatch and result, each compression, its end) is an event here, recorded before anything
uses it, and each step is decided from the fold of these events. A runtime that restarts, or
another replica, replays the invocation and continues without repeating a recorded model call
or tool call. Children (sub-agents, sub-workflow runs, sandbox tool calls) report their end by
appending a `ToolCallRecorded` here; that event drives the parent's next step, so nothing
waits in memory. The node's result for the scheduler is a `NodeCompleted` /
`NodeAttemptFailed` on `heym.run.<run>.node.<invocation>`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.base import Event
from contracts.memory import MemoryTarget
from contracts.runs import WorkflowSnapshot

ToolStatus = Literal["success", "error", "pending", "timeout", "cancelled"]
AgentEnd = Literal["success", "error", "cancelled"]


class AgentRequested(Event, tag="agent.requested", frozen=True):
    """The scheduler dispatched an agent or llm node: everything the invocation needs, copied
    from the dispatch so that the aggregate alone drives every later step."""

    invocation_id: str
    node_id: str
    node_label: str
    node_type: str = "agent"
    node: dict[str, Any] = msgspec.field(default_factory=dict)
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    upstream: dict[str, Any] = msgspec.field(default_factory=dict)
    vars: dict[str, Any] = msgspec.field(default_factory=dict)
    attempt: int = 1
    dispatched_at_ms: int = 0
    timezone: str = "UTC"
    workflow_id: str = ""
    owner_id: str = ""
    depth: int = 0
    test_run: bool = False
    workflow: WorkflowSnapshot | None = None
    sub_workflows: dict[str, WorkflowSnapshot] = msgspec.field(default_factory=dict)
    trigger_source: str = "API"
    # The run's global variables as snapshotted at its start (`$global`).
    globals: dict[str, Any] = msgspec.field(default_factory=dict)
    # The node runs on a paused agent's review branch: it may not pause for a review itself.
    review_branch: bool = False


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
    # Time spent listing the MCP servers' tools (`timing_breakdown.mcp_list_ms`).
    mcp_list_ms: float = 0.0
    # The memory graphs this run read into its prompt (Heym §7): its own (`own`) and the ones
    # shared with it (`read` / `write`). Extraction after a success writes `own` and `write`.
    memory: list[MemoryTarget] = msgspec.field(default_factory=list)


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
    # Which try of this turn's model call answered (earlier tries: `ModelCallFailed`).
    attempt: int = 1


class ModelCallFailed(Event, tag="agent.model_call_failed", frozen=True):
    """One model request failed (429, 5xx, timeout, unreachable); retried inside the invocation
    with back-off, so no earlier turn or tool is repeated."""

    turn: int
    attempt: int
    error: str
    retryable: bool = True
    status_code: int | None = None
    retry_after_s: float | None = None
    elapsed_ms: float = 0.0
    model: str = ""
    fallback: bool = False


class DispatchedCall(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call handed to another aggregate: a sub-agent invocation, a child run, or a
    tool-sandbox work item (`target` names it)."""

    tool_call_id: str
    name: str
    source: str
    target: str


class ToolCallsDispatched(Event, tag="agent.tools_dispatched", frozen=True):
    """Tool calls of a turn that run elsewhere; each reports its end as a `ToolCallRecorded`."""

    turn: int
    calls: list[DispatchedCall] = msgspec.field(default_factory=list)
    dispatched_at_ms: int = 0


class AgentCancelRequested(Event, tag="agent.cancel_requested", frozen=True):
    """Stop this invocation (its run, or its parent agent, was cancelled)."""

    reason: str = "cancelled"


class AgentNudged(Event, tag="agent.nudged", frozen=True):
    """The sweeper found the invocation quiet for too long: decide again and repeat any effect
    that may have been lost (all of them are idempotent)."""

    reason: str = ""


class GuardrailChecked(Event, tag="agent.guardrail_checked", frozen=True):
    """The resolved user message was classified by the guardrail model before the agent's
    first model call (Heym §4.1). Recorded, so a replay never classifies again.

    `outcome`: `passed`, `violated` (the node fails without retry, naming `violated` and
    `severity`), `failed` (the check itself failed: blocked for safety; `retryable` when the
    guardrail model was unreachable or busy) or `skipped` (empty message, no categories)."""

    outcome: Literal["passed", "violated", "failed", "skipped"]
    categories: list[str] = msgspec.field(default_factory=list)
    severity: str = "medium"
    violated: list[str] = msgspec.field(default_factory=list)
    error: str | None = None
    retryable: bool = False
    model: str = ""
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    elapsed_ms: float = 0.0
    trace: dict[str, Any] = msgspec.field(default_factory=dict)
    node_id: str = ""
    node_label: str = ""


class AgentFinished(Event, tag="agent.finished", frozen=True):
    """The invocation's end; its result is then delivered to whoever waits for it."""

    status: AgentEnd
    output: Any = None
    error: str | None = None
    retryable: bool = False
    finished_at_ms: int = 0


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
    # The orchestrator's turn that made the call (0 in logs written before it was recorded).
    turn: int = 0
    test_run: bool = False
    parent_node_id: str = ""
    parent_node_label: str = ""
    globals: dict[str, Any] = msgspec.field(default_factory=dict)
    # The orchestrator runs on a paused agent's review branch: so does the sub-agent.
    review_branch: bool = False


class NodeToolDispatched(Event, tag="agent.node_tool_dispatched", frozen=True):
    """A canvas node wired to an agent's `tool-input` runs once as a tool, by its own executor.

    Written by earlier builds only (kept so their logs replay): canvas node tools now go to the
    tool sandbox as `tool.dispatched` work items."""

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
    AgentRequested,
    AgentStarted,
    ModelCallFailed,
    ToolCallsDispatched,
    AgentCancelRequested,
    AgentNudged,
    AgentFinished,
    LlmCallRecorded,
    ToolCallRecorded,
    ContextCompressed,
    SubAgentDispatched,
    NodeToolDispatched,
    GuardrailChecked,
)
