"""A node's view of the run: its direct inputs, its upstream outputs, its expression context."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contracts.workflows import HANDLE_HITL
from libs.expressions import ExpressionContext, build_context
from services.scheduler.domain.state import SUCCESS, RunState


@dataclass
class NodeCall:
    """Everything a pure node evaluator may read; evaluators never change the state."""

    state: RunState
    node_id: str
    now_ms: int
    _ctx: ExpressionContext | None = field(default=None, repr=False)
    _inputs: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def data(self) -> dict[str, Any]:
        return dict(self.state.graph.data[self.node_id])

    @property
    def label(self) -> str:
        return self.state.graph.labels[self.node_id]

    @property
    def type(self) -> str:
        return self.state.graph.types[self.node_id]

    @property
    def inputs(self) -> dict[str, Any]:
        """Direct inputs by source label: active in-edges whose source succeeded."""
        if self._inputs is None:
            self._inputs = direct_inputs(self.state, self.node_id)
        return self._inputs

    @property
    def vars(self) -> dict[str, Any]:
        return self.state.vars

    @property
    def first_input(self) -> Any:
        return next(iter(self.inputs.values()), None)

    @property
    def ctx(self) -> ExpressionContext:
        if self._ctx is None:
            state = self.state
            self._ctx = build_context(
                self.inputs,
                upstream_outputs(state, self.node_id),
                vars=state.vars,
                global_vars=state.request.globals,
                credentials=state.credentials,
                now=datetime.fromtimestamp(self.now_ms / 1000, UTC),
                timezone=state.request.timezone or "UTC",
                # $UUID and randomInt are recorded in the node's output, never re-drawn on
                # replay; seeding by invocation keeps a re-decision after a conflict stable.
                random_seed=zlib.crc32(
                    f"{state.run_id}:{self.node_id}:{state.next_invocation}".encode()
                ),
            )
        return self._ctx


def direct_inputs(state: RunState, node_id: str) -> dict[str, Any]:
    graph = state.graph
    edges = graph.error_in.get(node_id) if node_id in graph.error_flow else graph.in_edges[node_id]
    found: dict[str, Any] = {}
    for e in edges or ():
        if state.status.get(e.source) == SUCCESS and e.source in state.outputs:
            found[graph.labels[e.source]] = state.outputs[e.source]
        elif e.source_handle == HANDLE_HITL and e.source in state.paused:
            # The review branch runs with the paused agent's pending payload.
            found[graph.labels[e.source]] = state.paused[e.source].output
    return found


def upstream_outputs(state: RunState, node_id: str) -> dict[str, Any]:
    graph = state.graph
    if node_id in graph.error_flow:
        # The error flow may refer to anything that ran before the failure.
        return {
            graph.labels[n]: out
            for n, out in state.outputs.items()
            if state.status.get(n) == SUCCESS and n != node_id
        }
    found = {
        graph.labels[a]: state.outputs[a]
        for a in graph.ancestors[node_id]
        if state.status.get(a) == SUCCESS and a in state.outputs
    }
    for a in graph.ancestors[node_id]:
        if a in state.paused and graph.labels[a] not in found:
            found[graph.labels[a]] = state.paused[a].output
    return found
