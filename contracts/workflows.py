"""The workflow node catalogue: every node type Heym runs, who executes it, what it needs.

Workflows keep Heym's JSON shapes: `{id, type, position, data: {label, ...}}` nodes and
`{id, source, target, sourceHandle?, targetHandle?}` edges, stored and carried as plain dicts
so fields this build does not know survive a round trip.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

Executor = Literal["scheduler", "agent_runtime", "tool_sandbox", "review"]


class NodeType(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    executor: Executor
    # `data` fields a saved workflow must set (validated on save with a 422 naming the node).
    required: tuple[str, ...] = ()
    description: str = ""


NODE_TYPES: Final[dict[str, NodeType]] = {
    t.name: t
    for t in (
        NodeType(name="textInput", executor="scheduler", description="run input (webhook/manual)"),
        NodeType(name="cron", executor="scheduler", description="scheduled trigger"),
        NodeType(name="errorHandler", executor="scheduler", description="roots the error flow"),
        NodeType(name="sticky", executor="scheduler", description="canvas note"),
        NodeType(name="condition", executor="scheduler"),
        NodeType(name="switch", executor="scheduler"),
        NodeType(name="merge", executor="scheduler"),
        NodeType(name="loop", executor="scheduler"),
        NodeType(name="set", executor="scheduler"),
        NodeType(name="variable", executor="scheduler", required=("variableName",)),
        NodeType(name="jsonOutputMapper", executor="scheduler"),
        NodeType(name="output", executor="scheduler"),
        NodeType(name="consoleLog", executor="scheduler"),
        NodeType(name="throwError", executor="scheduler"),
        NodeType(name="disableNode", executor="scheduler", required=("targetNodeLabel",)),
        NodeType(name="wait", executor="scheduler", description="durable timer"),
        NodeType(name="execute", executor="scheduler", required=("executeWorkflowId",)),
        NodeType(name="http", executor="tool_sandbox", required=("curl",)),
        NodeType(
            name="a2a",
            executor="tool_sandbox",
            required=("agentUrl",),
            description="calls a remote A2A 1.0 agent",
        ),
        NodeType(name="llm", executor="agent_runtime"),
        NodeType(name="agent", executor="agent_runtime"),
    )
}

# Source handles (Heym's names).
HANDLE_TRUE: Final = "true"
HANDLE_FALSE: Final = "false"
HANDLE_LOOP: Final = "loop"
HANDLE_DONE: Final = "done"
HANDLE_ERROR: Final = "error"
HANDLE_HITL: Final = "hitl"
HANDLE_SUB_AGENTS: Final = "sub-agents"
# Target handles.
TARGET_LOOP: Final = "loop"
TARGET_TOOL_INPUT: Final = "tool-input"
TARGET_SUB_AGENT_INPUT: Final = "sub-agent-input"

MAX_SUB_WORKFLOW_DEPTH: Final = 5
