"""A successful run's final outputs: its terminals by label (Heym §2.8)."""

from __future__ import annotations

from typing import Any

from services.scheduler.domain.state import SUCCESS, RunState


def final_outputs(state: RunState) -> dict[str, Any]:
    graph = state.graph
    contributing = [
        n
        for n in graph.main
        if n in graph.terminals
        and graph.types[n] != "sticky"
        and state.status.get(n) == SUCCESS
        and n in state.outputs
    ]
    if len(contributing) == 1 and graph.types[contributing[0]] == "jsonOutputMapper":
        only = state.outputs[contributing[0]]
        return only if isinstance(only, dict) else {"value": only}
    return {graph.labels[n]: state.outputs[n] for n in contributing}
