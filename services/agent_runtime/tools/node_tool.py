"""Canvas node tools (§4.6): a node wired to an agent's `tool-input` runs once as a tool.

The agent's arguments are overlaid on a copy of the node's data (the stored configuration is
never changed). Nodes the agent can evaluate itself (the generic pure nodes) run here; an
`http` node is dispatched to the tool sandbox, its executor, and awaited. Branch scheduling
does not apply: the node's output is the tool result.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from contracts import subjects
from contracts.agents import NodeToolDispatched
from contracts.nodes import NodeCompleted
from libs.eventlog import EventLog
from libs.expressions import ExpressionContext
from libs.nodes import GENERIC_NODES
from services.agent_runtime.call import AgentCall
from services.agent_runtime.tools.spec import ToolOutcome
from services.agent_runtime.waits import WaitTimeout, node_result

SANDBOXED = {"http"}


@dataclass
class _ToolNodeView:
    data: dict[str, Any]
    label: str
    inputs: dict[str, Any]
    ctx: ExpressionContext
    vars: dict[str, Any]

    @property
    def first_input(self) -> Any:
        return next(iter(self.inputs.values()), None)


def overlay(data: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    merged = dict(data)
    for key, value in args.items():
        if isinstance(data.get(key), bool) and isinstance(value, str):
            value = value.strip().lower() in ("true", "1", "yes")
        merged[key] = value
    return merged


async def run_node_tool(
    log: EventLog,
    call: AgentCall,
    tool_call_id: str,
    node: dict[str, Any],
    args: dict[str, Any],
    timeout: float,
) -> ToolOutcome:
    ntype = str(node.get("type"))
    data = overlay(dict(node.get("data") or {}), args)
    label = str(data.get("label") or node.get("id"))
    extra = {"node_id": node.get("id"), "node_type": ntype}
    evaluator = GENERIC_NODES.get(ntype)
    if evaluator is not None:
        outcome = evaluator(_ToolNodeView(data, label, call.inputs, call.ctx, call.vars))
        if outcome.error is not None:
            return ToolOutcome.error(outcome.error, extra=extra)
        return ToolOutcome(result=outcome.output, extra=extra)
    if ntype not in SANDBOXED:
        return ToolOutcome.error(f"a {ntype!r} node cannot run as an agent tool", extra=extra)
    invocation = f"{call.invocation_id}t{hashlib.sha1(tool_call_id.encode()).hexdigest()[:10]}"
    await log.append(
        subjects.run_decisions(call.run_id, "tool_sandbox"),
        [
            NodeToolDispatched(
                invocation_id=invocation,
                parent_invocation_id=call.invocation_id,
                tool_call_id=tool_call_id,
                node_id=str(node.get("id")),
                node_label=label,
                node_type=ntype,
                node={**node, "data": data},
                inputs=call.inputs,
                upstream=call.upstream,
                vars=call.vars,
                idempotency_key=hashlib.sha256(f"{call.run_id}:{invocation}".encode()).hexdigest()[
                    :32
                ],
            )
        ],
        message_id=f"nodetool-{call.run_id}-{invocation}",
        traceparent=call.traceparent,
    )
    try:
        result = await node_result(log, call.run_id, invocation, timeout=timeout)
    except WaitTimeout:
        return ToolOutcome.error(
            f"node tool {label!r} did not finish in {timeout:.0f}s", status="timeout", extra=extra
        )
    if isinstance(result, NodeCompleted) and result.status == "success":
        return ToolOutcome(result=result.output, extra=extra)
    return ToolOutcome.error(result.error or "node tool failed", extra=extra)
