"""Nodes the scheduler evaluates itself (pure: no I/O), one module per node type.

Registered explicitly in `PURE_NODES`; `wait` and `execute` are not here: the scheduler
handles them in `decide` (a durable timer, a child run).
"""

from __future__ import annotations

from collections.abc import Callable

from services.scheduler.domain.context import NodeCall
from services.scheduler.domain.nodes import branching, data, flow, terminal, triggers
from services.scheduler.domain.nodes.outcome import Outcome

Evaluator = Callable[[NodeCall], Outcome]

PURE_NODES: dict[str, Evaluator] = {
    "textInput": triggers.text_input,
    "cron": triggers.cron,
    "sticky": triggers.sticky,
    "errorHandler": triggers.error_handler,
    "condition": branching.condition,
    "switch": branching.switch,
    "loop": branching.loop,
    "merge": data.merge,
    "set": data.set_node,
    "jsonOutputMapper": data.set_node,
    "variable": data.variable,
    "output": terminal.output,
    "consoleLog": flow.console_log,
    "throwError": flow.throw_error,
    "disableNode": flow.disable_node,
}

__all__ = ["PURE_NODES", "Evaluator", "NodeCall", "Outcome"]
