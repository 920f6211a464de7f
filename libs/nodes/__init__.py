"""Pure node evaluators that need only the node and its inputs, shared by the scheduler (as
workflow nodes) and the agent runtime (canvas nodes run as agent tools)."""

from __future__ import annotations

from collections.abc import Callable

from libs.nodes import data, flow, terminal
from libs.nodes.branching import condition, switch
from libs.nodes.outcome import Outcome
from libs.nodes.view import NodeView

GenericEvaluator = Callable[[NodeView], Outcome]

GENERIC_NODES: dict[str, GenericEvaluator] = {
    "condition": condition,
    "switch": switch,
    "merge": data.merge,
    "set": data.set_node,
    "jsonOutputMapper": data.set_node,
    "variable": data.variable,
    "output": terminal.output,
    "consoleLog": flow.console_log,
    "throwError": flow.throw_error,
}

__all__ = ["GENERIC_NODES", "GenericEvaluator", "NodeView", "Outcome"]
