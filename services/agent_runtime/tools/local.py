"""Canvas node tools (§4.6) the runtime evaluates itself: generic pure nodes, run once.

The agent's arguments are overlaid on a copy of the node's data (the stored configuration is
never changed); branch scheduling does not apply: the node's output is the tool result. The
nodes the tool sandbox executes (`http`, `a2a`) are not evaluated here: they go to the tool
sandbox (`delegation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.workflows import NODE_TYPES
from libs.expressions import ExpressionContext
from libs.nodes import GENERIC_NODES
from services.agent_runtime.call import AgentCall
from services.agent_runtime.tools.spec import ToolOutcome

SANDBOXED = frozenset(name for name, t in NODE_TYPES.items() if t.executor == "tool_sandbox")


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


def node_extra(node: dict[str, Any]) -> dict[str, Any]:
    return {"node_id": node.get("id"), "node_type": node.get("type")}


def run_local_node(
    call: AgentCall, node: dict[str, Any], args: dict[str, Any]
) -> ToolOutcome | None:
    """The node's result, or None when the node must run in the tool sandbox."""
    ntype = str(node.get("type"))
    if ntype in SANDBOXED:
        return None
    extra = node_extra(node)
    evaluator = GENERIC_NODES.get(ntype)
    if evaluator is None:
        return ToolOutcome.error(f"a {ntype!r} node cannot run as an agent tool", extra=extra)
    data = overlay(dict(node.get("data") or {}), args)
    label = str(data.get("label") or node.get("id"))
    outcome = evaluator(_ToolNodeView(data, label, call.inputs, call.ctx, call.vars))
    if outcome.error is not None:
        return ToolOutcome.error(outcome.error, extra=extra)
    return ToolOutcome(result=outcome.output, extra=extra)
