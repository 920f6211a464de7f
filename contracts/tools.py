"""Agent tool calls executed by the tool sandbox, as work items on the event log.

An agent's python, skill, mcp and canvas-node (`http`) tool calls are dispatched as a
`SandboxToolDispatched` on `heym.work.<run>.tool_sandbox.<item>` (appended with expected
sequence 0, so a call is dispatched once however often the agent re-drives). Any sandbox
replica may take it; the sandbox records the call's result as an `agent.tool_result`
(`ToolCallRecorded`) on the calling agent's aggregate `heym.agent.<run>.<invocation>`, with
the message id `tool-<run>-<invocation>-<tool_call_id>`, and never runs a call again once that
result is recorded. A `SandboxToolCancelled` on the same work-item subject asks the sandbox to
stop the call (kill its process); the cancelled agent records its own end either way.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from contracts.base import Event
from contracts.subjects import query

SandboxSource = Literal["python", "skill", "mcp", "node_tool", "a2a"]


def tool_result_message_id(run_id: str, invocation_id: str, tool_call_id: str) -> str:
    """The message id of a tool call's result on the agent's aggregate (deduplicates retries).

    Invocation and tool call ids repeat across runs (`i2`, a model's `call_1`): the run id
    makes the message id unique in the stream's duplicate window."""
    return f"tool-{run_id}-{invocation_id}-{tool_call_id}"


class SandboxToolDispatched(Event, tag="tool.dispatched", frozen=True):
    """One agent tool call for the tool sandbox to execute.

    `meta` carries what the source needs: `{"code": ...}` for a python tool, `{"skill": {...}}`
    for a skill, `{"server": {...}, "tool": name}` for an MCP tool, `{"agent": {url,
    credentialId, authHeader, mode, timeoutSeconds, name}}` for a remote A2A agent, and for a
    canvas node run as a tool `{"node": node-with-arguments-overlaid, "inputs", "upstream",
    "vars"}`.
    """

    item_id: str
    invocation_id: str
    tool_call_id: str
    turn: int
    name: str
    source: SandboxSource
    arguments: str
    meta: dict[str, Any] = msgspec.field(default_factory=dict)
    timeout_s: float = 30.0
    owner_id: str = ""
    workflow_id: str = ""
    node_id: str = ""
    node_label: str = ""
    idempotency_key: str = ""
    dispatched_at_ms: int = 0
    timezone: str = "UTC"
    test_run: bool = False


class SandboxToolCancelled(Event, tag="tool.cancelled", frozen=True):
    """Stop a dispatched call if it is still running (the run or the agent was cancelled)."""

    tool_call_id: str
    reason: str = "cancelled"


SANDBOX_TOOL_EVENTS: tuple[type[Event], ...] = (SandboxToolDispatched, SandboxToolCancelled)

# Listing an agent's MCP tools at its start (a query: no side effect, so request/reply). The
# sandbox answers from its warm sessions; a server that fails is skipped with its reason.
MCP_LIST_SUBJECT: Final = query("tool_sandbox", "mcp_list_tools")


class McpListRequest(msgspec.Struct, kw_only=True):
    owner_id: str
    # Each as `McpServer.dispatch_form()` (libs/tools): inline settings, or a stored id.
    connections: list[dict[str, Any]]
    timeout_s: float = 30.0


class McpListReply(msgspec.Struct, kw_only=True):
    tools: list[dict[str, Any]] = msgspec.field(default_factory=list)
    # server name -> why it was skipped
    errors: dict[str, str] = msgspec.field(default_factory=dict)
    elapsed_ms: float = 0.0


# Core (not stored) broadcast between sandbox replicas: "cancel this call if you run it".
TOOL_CANCEL_BROADCAST: Final = "heym.svc.tool_sandbox.cancel"


# The sandbox holds no database URL and no secret key: it asks the agent runtime (which
# decrypts stored credentials) for a stored MCP connection, secrets included, over core NATS
# (never written to the log).
MCP_CONNECTION_SUBJECT: Final = query("agent_runtime", "mcp_connection")


class McpConnectionRequest(msgspec.Struct, kw_only=True):
    owner_id: str
    connection_id: str


class McpConnectionReply(msgspec.Struct, kw_only=True):
    # `McpServer.dispatch_form()` with headers and env; None when the owner has no such one
    connection: dict[str, Any] | None = None


# The key of a stored credential a work item names (a remote A2A agent's `credentialId`, or an
# `a2a` canvas node's), asked of the agent runtime. It answers only for a dispatched item of
# that run whose `meta` names that credential, with the dispatching owner's credential, and
# only while the call has no result; over core NATS, never written to the log.
TOOL_CREDENTIAL_SUBJECT: Final = query("agent_runtime", "tool_credential")


class ToolCredentialRequest(msgspec.Struct, kw_only=True):
    run_id: str
    item_id: str


class ToolCredentialReply(msgspec.Struct, kw_only=True):
    value: str = ""
    error: str | None = None
