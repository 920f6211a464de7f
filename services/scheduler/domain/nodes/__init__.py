"""Nodes the scheduler evaluates itself (pure: no I/O), registered explicitly in `PURE_NODES`.

The generic evaluators (`libs.nodes`) need only a node and its inputs; the ones here read the
run (its inputs, loop state, graph or first error). `wait` and `execute` are not here: the
scheduler handles them in `decide` (a durable timer, a child run).
"""

from __future__ import annotations

from collections.abc import Callable

from libs.nodes import GENERIC_NODES, Outcome
from services.scheduler.domain.context import NodeCall
from services.scheduler.domain.nodes import loop, run_nodes, triggers

Evaluator = Callable[[NodeCall], Outcome]

PURE_NODES: dict[str, Evaluator] = {
    **GENERIC_NODES,
    "textInput": triggers.text_input,
    "cron": triggers.cron,
    "sticky": triggers.sticky,
    "errorHandler": triggers.error_handler,
    "loop": loop.loop,
    "disableNode": run_nodes.disable_node,
}

__all__ = ["PURE_NODES", "Evaluator", "NodeCall", "Outcome"]
