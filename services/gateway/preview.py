"""The canvas an expression preview sees (Heym §3.5): each upstream node's output from pinned
data, the editor's last results, or derived without a run (textInput from the sample body,
set / jsonOutputMapper from their mappings, loop items for the selected iteration), and `$vars`
built from the workflow's variable nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from libs.expressions import ExpressionContext, ExpressionError, build_context, resolve_value
from libs.nodes.data import coerce_variable
from libs.workflow import Graph

# Nodes whose output the preview works out from their configuration when no result is given.
_DERIVED = frozenset({"textInput", "set", "jsonOutputMapper", "variable", "loop"})


@dataclass
class Canvas:
    """What one node's expressions see in the editor: its inputs, ancestors and `$vars`."""

    direct: dict[str, Any] = field(default_factory=dict)
    upstream: dict[str, Any] = field(default_factory=dict)
    vars: dict[str, Any] = field(default_factory=dict)
    loop_total: int | None = None


def text_input_preview(input_body: Any) -> dict[str, Any]:
    """The textInput's output for a sample request: the editor sends `{"body": {...}}`."""
    body = input_body.get("body", input_body) if isinstance(input_body, dict) else input_body
    envelope: dict[str, Any] = {"headers": {}, "query": {}, "body": body}
    if isinstance(body, dict):
        return {**body, **envelope}
    return {"text": body, **envelope} if isinstance(body, str) else envelope


class Previewer:
    def __init__(
        self,
        graph: Graph,
        results: dict[str, Any],
        *,
        input_body: Any,
        loop_index: int | None,
        global_vars: dict[str, Any],
        credentials: dict[str, str],
    ) -> None:
        self._graph = graph
        self._results = results
        self._input_body = input_body
        self._loop_index = loop_index or 0
        self._globals = global_vars
        self._credentials = credentials
        self._outputs: dict[str, Any] = {}
        self._vars: dict[str, Any] = {}
        self.loop_total: int | None = None

    def canvas(self, current: str) -> Canvas:
        graph = self._graph
        ancestors = graph.ancestors[current]
        # A node has more ancestors than any of its ancestors: this is a topological order.
        for nid in sorted(ancestors, key=lambda a: len(graph.ancestors[a])):
            self._visit(nid, current)
        direct_ids = {e.source for e in graph.in_edges[current]}
        labels = graph.labels
        return Canvas(
            direct={
                labels[n]: self._outputs[n]
                for n in graph.order
                if n in direct_ids and n in self._outputs
            },
            upstream={labels[n]: self._outputs[n] for n in ancestors if n in self._outputs},
            vars=dict(self._vars),
            loop_total=self.loop_total,
        )

    def context_for(self, nid: str) -> ExpressionContext:
        graph = self._graph
        labels = graph.labels
        direct = {
            labels[e.source]: self._outputs[e.source]
            for e in graph.in_edges[nid]
            if e.source in self._outputs
        }
        upstream = {labels[a]: self._outputs[a] for a in graph.ancestors[nid] if a in self._outputs}
        return build_context(
            direct,
            upstream,
            vars=self._vars,
            global_vars=self._globals,
            credentials=self._credentials,
        )

    def _visit(self, nid: str, current: str) -> None:
        graph = self._graph
        data = graph.data[nid]
        ntype = graph.types[nid]
        value: Any = None
        if data.get("pinnedData") is not None:  # pinned data beats canvas results
            pinned = data["pinnedData"]
            value = pinned if isinstance(pinned, dict) else {"value": pinned}
        elif ntype == "loop" and current in graph.loop_bodies.get(nid, ()):
            value = self._loop_item(nid)  # the body sees the chosen iteration
        elif nid in self._results:
            value = self._results[nid]
        elif ntype in _DERIVED:
            value = self._derive(nid, ntype, data)
        if value is None:
            return
        self._outputs[nid] = value
        if ntype == "variable" and isinstance(value, dict) and "name" in value:
            self._vars[str(value["name"])] = value.get("value")

    def _derive(self, nid: str, ntype: str, data: Any) -> Any:
        if ntype == "textInput":
            if self._input_body is not None:
                return text_input_preview(self._input_body)
            text = data.get("value")
            return {"text": text} if text not in (None, "") else None
        ctx = self.context_for(nid)
        try:
            if ntype in ("set", "jsonOutputMapper"):
                out: dict[str, Any] = {}
                for mapping in data.get("mappings") or []:
                    if isinstance(mapping, dict) and str(mapping.get("key", "")).strip():
                        out[str(mapping["key"]).strip()] = resolve_value(
                            mapping.get("value", ""), ctx
                        )
                return out
            if ntype == "variable":
                name = str(data.get("variableName", "")).strip()
                if not name:
                    return None
                kind = str(data.get("variableType") or "auto")
                value = coerce_variable(resolve_value(data.get("variableValue", ""), ctx), kind)
                return {"name": name, "value": value, "type": kind}
        except ExpressionError:
            return None
        return None

    def _items(self, nid: str) -> list[Any]:
        expression = self._graph.data[nid].get("arrayExpression") or "$input"
        try:
            value = resolve_value(expression, self.context_for(nid))
        except ExpressionError:
            return []
        return [] if value is None else value if isinstance(value, list) else [value]

    def _loop_item(self, nid: str) -> dict[str, Any]:
        items = self._items(nid)
        total = len(items)
        index = min(max(0, self._loop_index), max(0, total - 1))
        self.loop_total = total
        return {
            "item": items[index] if items else None,
            "index": index,
            "total": total,
            "isFirst": index == 0,
            "isLast": index == total - 1,
            "branch": "loop",
        }
