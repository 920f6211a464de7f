"""`Graph`: a workflow's nodes and edges analysed once (Heym's executor pre-processing, §2.1).

Active edges, roots, terminals, the error flow, pre-skipped nodes, loop-back edges, loop
bodies and ancestors are all derived here, so the scheduler's fold and the gateway's
validation agree on one reading of a workflow.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from contracts.workflows import (
    HANDLE_LOOP,
    HANDLE_SUB_AGENTS,
    TARGET_LOOP,
    TARGET_SUB_AGENT_INPUT,
    TARGET_TOOL_INPUT,
)

_DEFAULT_SOURCE = {None, "", "output", "default-output"}
_DEFAULT_TARGET = {None, "", "input", "default-input"}
_UI_ONLY_SOURCE = {HANDLE_SUB_AGENTS}
_UI_ONLY_TARGET = {TARGET_SUB_AGENT_INPUT}


class GraphError(ValueError):
    """The nodes/edges are not even shaped like a workflow (not lists of objects with ids)."""


@dataclass(frozen=True, slots=True)
class Edge:
    id: str
    source: str
    target: str
    source_handle: str | None
    target_handle: str | None


def _handle(value: Any, defaults: set[Any]) -> str | None:
    if value in defaults:
        return None
    return str(value)


class Graph:
    """Read-only analysis of one workflow; build once per run (it is cached in run state)."""

    def __init__(
        self, nodes: Iterable[Mapping[str, Any]], edges: Iterable[Mapping[str, Any]]
    ) -> None:
        self.nodes: dict[str, Mapping[str, Any]] = {}
        self.order: list[str] = []
        for raw in nodes:
            if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
                raise GraphError("every node must be an object with a string 'id'")
            self.nodes[raw["id"]] = raw
            self.order.append(raw["id"])
        self.types = {nid: str(n.get("type", "")) for nid, n in self.nodes.items()}
        self.data: dict[str, Mapping[str, Any]] = {
            nid: (n.get("data") if isinstance(n.get("data"), Mapping) else {})  # type: ignore[misc]
            for nid, n in self.nodes.items()
        }
        self.labels = {nid: str(self.data[nid].get("label") or nid) for nid in self.order}
        self.by_label = {label: nid for nid, label in self.labels.items()}
        self.all_edges: list[Edge] = []
        for i, raw in enumerate(edges):
            if not isinstance(raw, Mapping):
                raise GraphError("every edge must be an object")
            self.all_edges.append(
                Edge(
                    id=str(raw.get("id") or f"edge-{i}"),
                    source=str(raw.get("source", "")),
                    target=str(raw.get("target", "")),
                    source_handle=_handle(raw.get("sourceHandle"), _DEFAULT_SOURCE),
                    target_handle=_handle(raw.get("targetHandle"), _DEFAULT_TARGET),
                )
            )
        self._analyse()

    # -- analysis ---------------------------------------------------------------------------
    def _analyse(self) -> None:
        known = [e for e in self.all_edges if e.source in self.nodes and e.target in self.nodes]
        self.tool_edges = [e for e in known if e.target_handle == TARGET_TOOL_INPUT]
        self.tool_nodes = frozenset(e.source for e in self.tool_edges)
        self.inactive = frozenset(
            nid for nid in self.order if self.data[nid].get("active") is False
        )
        sub_agent_labels = {
            str(label)
            for nid in self.order
            if self.types[nid] == "agent" and self.data[nid].get("isOrchestrator")
            for label in (self.data[nid].get("subAgentLabels") or [])
        }
        self.sub_agents = frozenset(
            nid
            for nid in self.order
            if self.types[nid] == "agent" and self.labels[nid] in sub_agent_labels
        )
        structural = [
            e
            for e in known
            if e.target_handle not in _UI_ONLY_TARGET
            and e.source_handle not in _UI_ONLY_SOURCE
            and e.target_handle != TARGET_TOOL_INPUT
            and e.source not in self.tool_nodes
        ]
        self.error_handlers = tuple(nid for nid in self.order if self.types[nid] == "errorHandler")
        self.error_flow = frozenset(self._reach(self.error_handlers, structural))
        self.error_edges = [e for e in structural if e.source in self.error_flow]
        self.error_out: dict[str, list[Edge]] = {n: [] for n in self.error_flow}
        self.error_in: dict[str, list[Edge]] = {n: [] for n in self.error_flow}
        for e in self.error_edges:
            if e.target in self.error_flow:
                self.error_out[e.source].append(e)
                self.error_in[e.target].append(e)

        def active(e: Edge) -> bool:
            if e.source in self.error_flow or e.target in self.error_flow:
                return False
            if self.types[e.source] == "jsonOutputMapper":
                return False
            return not (
                self.types[e.source] == "output" and not self.data[e.source].get("allowDownstream")
            )

        self.active_edges = [e for e in structural if active(e)]
        self.loop_back = frozenset(
            e.id
            for e in self.active_edges
            if self.types[e.target] == "loop" and e.target_handle == TARGET_LOOP
        )
        self.out_edges: dict[str, list[Edge]] = {nid: [] for nid in self.order}
        self.in_edges: dict[str, list[Edge]] = {nid: [] for nid in self.order}
        for e in self.active_edges:
            self.out_edges[e.source].append(e)
            self.in_edges[e.target].append(e)
        # Edges that gate readiness: a loop's loop-back input does not count.
        self.gating_in: dict[str, list[Edge]] = {
            nid: [e for e in self.in_edges[nid] if e.id not in self.loop_back] for nid in self.order
        }
        orphan_outputs = {
            nid
            for nid in self.order
            if self.types[nid] == "output" and not self.in_edges[nid] and nid not in self.error_flow
        }
        self.pre_skipped = frozenset(self.sub_agents | self.tool_nodes | orphan_outputs)
        self.main = [
            n for n in self.order if n not in self.error_flow and n not in self.pre_skipped
        ]
        self.roots = [n for n in self.main if not self.gating_in[n]]
        self.terminals = frozenset(
            n
            for n in self.main
            if self.types[n] in ("output", "jsonOutputMapper") or not self.out_edges[n]
        )
        forward = [e for e in self.active_edges if e.id not in self.loop_back]
        self.forward_edges = forward
        self.ancestors = self._ancestors(forward)
        self.loop_bodies = {
            nid: frozenset(self._loop_body(nid)) for nid in self.order if self.types[nid] == "loop"
        }

    def _reach(
        self, starts: Iterable[str], edges: Iterable[Edge], stop: str | None = None
    ) -> set[str]:
        out: dict[str, list[str]] = {}
        for e in edges:
            out.setdefault(e.source, []).append(e.target)
        seen: set[str] = set()
        queue = deque(starts)
        while queue:
            nid = queue.popleft()
            if nid in seen or nid == stop:
                continue
            seen.add(nid)
            queue.extend(out.get(nid, ()))
        return seen

    def _ancestors(self, edges: list[Edge]) -> dict[str, frozenset[str]]:
        parents: dict[str, set[str]] = {nid: set() for nid in self.order}
        for e in edges:
            parents[e.target].add(e.source)
        memo: dict[str, frozenset[str]] = {}
        for nid in self.order:
            if nid in memo:
                continue
            # iterative DFS; the forward graph is acyclic once validated, guard anyway
            stack = [nid]
            seen: set[str] = set()
            found: set[str] = set()
            while stack:
                cur = stack.pop()
                for p in parents[cur]:
                    if p not in seen:
                        seen.add(p)
                        found.add(p)
                        stack.append(p)
            memo[nid] = frozenset(found)
        return memo

    def _loop_body(self, loop_id: str) -> set[str]:
        starts = [e.target for e in self.out_edges[loop_id] if e.source_handle == HANDLE_LOOP]
        return self._reach(starts, self.forward_edges, stop=loop_id)

    # -- queries ----------------------------------------------------------------------------
    def reachable(self, starts: Iterable[str]) -> set[str]:
        """Nodes reachable over forward active edges (loop-backs excluded), starts included."""
        return self._reach(starts, self.forward_edges)

    def type_of(self, node_id: str) -> str:
        return self.types[node_id]

    def label_of(self, node_id: str) -> str:
        return self.labels[node_id]

    def find_cycle(self) -> list[str] | None:
        """A cycle in the forward active graph (loop-back edges excluded), if there is one."""
        out: dict[str, list[str]] = {nid: [] for nid in self.order}
        for e in self.forward_edges:
            out[e.source].append(e.target)
        white, grey, black = 0, 1, 2
        color = dict.fromkeys(self.order, white)
        for start in self.order:
            if color[start] != white:
                continue
            stack: list[tuple[str, int]] = [(start, 0)]
            path: list[str] = []
            while stack:
                nid, i = stack.pop()
                if i == 0:
                    color[nid] = grey
                    path.append(nid)
                targets = out[nid]
                if i < len(targets):
                    stack.append((nid, i + 1))
                    nxt = targets[i]
                    if color[nxt] == grey:
                        return [*path[path.index(nxt) :], nxt]
                    if color[nxt] == white:
                        stack.append((nxt, 0))
                else:
                    color[nid] = black
                    path.pop()
        return None
