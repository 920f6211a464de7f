"""The run detail's timeline as data (pure): node rows nested by who started whom, tool calls
and compressions of agents, human review pauses, all on one time axis.

Sources, all read models: node rows (`run_nodes`: start and end in `metadata`), the agent's
stored tool records (its output's `tool_calls`, already redacted and bounded), delegated
sub-agent rows (`metadata.parent_invocation_id`), child runs (`runs.parent_invocation_id`)
and review requests (a pause lasts from its opening to its decision).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from services.gateway.inspector.run_reads import RunData

COMPRESSION = "_context_compression"


@dataclass
class Pause:
    start_ms: int
    end_ms: int | None
    status: str
    url: str | None


@dataclass
class Compression:
    messages: int
    tokens_before: int | None
    tokens_after: int | None
    elapsed_ms: float | None


@dataclass
class RunItem:
    run: dict[str, Any]
    start_ms: int | None
    end_ms: int | None
    nodes: list[NodeItem] = field(default_factory=list)
    # Child runs whose starting node has no row (yet): shown after the nodes.
    loose_runs: list[RunItem] = field(default_factory=list)


@dataclass
class ToolItem:
    record: dict[str, Any]
    start_ms: int | None
    end_ms: int | None
    sub_agents: list[NodeItem] = field(default_factory=list)
    runs: list[RunItem] = field(default_factory=list)


@dataclass
class NodeItem:
    row: dict[str, Any]
    start_ms: int | None
    end_ms: int | None
    retries: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolItem | Compression] = field(default_factory=list)
    # Sub-agents and child runs not matched to one of the calls.
    sub_agents: list[NodeItem] = field(default_factory=list)
    runs: list[RunItem] = field(default_factory=list)
    pauses: list[Pause] = field(default_factory=list)


@dataclass(frozen=True)
class Axis:
    start_ms: int
    end_ms: int

    @property
    def span_ms(self) -> int:
        return max(1, self.end_ms - self.start_ms)

    def x(self, ms: int) -> float:
        """A time's place on the axis, 0 to 1000."""
        return min(1000.0, max(0.0, (ms - self.start_ms) * 1000.0 / self.span_ms))


def ms_of(value: Any) -> int | None:
    """Epoch milliseconds of a datetime, an ISO string or a positive number; else None."""
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value) if value > 0 else None
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(value).timestamp() * 1000)
        except ValueError:
            return None
    return None


def _meta(row: dict[str, Any]) -> dict[str, Any]:
    meta = row.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _is_retry(row: dict[str, Any]) -> bool:
    return _meta(row).get("retry_stage") == "attempt_failed"


class _Builder:
    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self.times: list[int] = []

    def _seen(self, *values: int | None) -> None:
        self.times.extend(v for v in values if v is not None)

    def run(self, data: RunData) -> RunItem:
        run = data.run
        start = ms_of(run.get("started_at")) or ms_of(run.get("requested_at"))
        end = ms_of(run.get("finished_at"))
        if end is None and run.get("status") in ("running", "pending"):
            end = self.now_ms
        self._seen(start, end)
        item = RunItem(run=run, start_ms=start, end_ms=end)
        pauses: dict[str, list[Pause]] = defaultdict(list)
        for p in data.pauses:
            pause = Pause(
                start_ms=ms_of(p["created_at"]) or 0,
                end_ms=ms_of(p.get("resolved_at")),
                status=str(p["status"]),
                url=p.get("review_url") or None,
            )
            pauses[str(p["invocation_id"])].append(pause)
        children: dict[str | None, list[RunItem]] = defaultdict(list)
        for child in data.children:
            children[child.run.get("parent_invocation_id")].append(self.run(child))
        finals, retries = self._finals(data.nodes)
        sub_agents: dict[str, list[dict[str, Any]]] = defaultdict(list)
        invocations = {str(_meta(r).get("invocation_id") or r.get("invocation_id")) for r in finals}
        top: list[dict[str, Any]] = []
        for row in finals:
            meta = _meta(row)
            parent = meta.get("parent_invocation_id")
            if meta.get("invocation") == "sub_agent_tool" and str(parent) in invocations:
                sub_agents[str(parent)].append(row)
            else:
                top.append(row)
        for row in top:
            item.nodes.append(self._node(row, retries, sub_agents, children, pauses))
        item.nodes.sort(key=lambda n: (n.start_ms or 0, n.row.get("sequence") or 0))
        used = {id(r) for n in self._all_nodes(item.nodes) for r in n.runs} | {
            id(r) for n in self._all_nodes(item.nodes) for c in n.calls
            if isinstance(c, ToolItem) for r in c.runs
        }  # fmt: skip
        for group in children.values():
            item.loose_runs.extend(r for r in group if id(r) not in used)
        return item

    @staticmethod
    def _all_nodes(nodes: list[NodeItem]) -> list[NodeItem]:
        out: list[NodeItem] = []
        stack = list(nodes)
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(node.sub_agents)
            stack.extend(s for c in node.calls if isinstance(c, ToolItem) for s in c.sub_agents)
        return out

    @staticmethod
    def _finals(
        rows: list[dict[str, Any]],
    ) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
        """Final rows, and each one's failed earlier attempts (keyed by the row's id()).

        A failed attempt belongs to the next row of the same node in log order; attempts with
        no later row (still retrying) are shown as rows of their own."""
        ordered = sorted(rows, key=lambda r: r.get("sequence") or 0)
        finals: list[dict[str, Any]] = []
        retries: dict[int, list[dict[str, Any]]] = defaultdict(list)
        waiting: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in ordered:
            if _is_retry(row):
                waiting[str(row.get("node_id"))].append(row)
                continue
            finals.append(row)
            retries[id(row)] = waiting.pop(str(row.get("node_id")), [])
        for left in waiting.values():
            for row in left:
                finals.append(row)
                retries[id(row)] = []
        return finals, retries

    def _node(
        self,
        row: dict[str, Any],
        retries: dict[int, list[dict[str, Any]]],
        sub_agents: dict[str, list[dict[str, Any]]],
        children: dict[str | None, list[RunItem]],
        pauses: dict[str, list[Pause]],
    ) -> NodeItem:
        meta = _meta(row)
        invocation = str(meta.get("invocation_id") or row.get("invocation_id") or "")
        start = ms_of(meta.get("started_at_ms"))
        end = ms_of(meta.get("ended_at_ms"))
        if row.get("status") == "pending":
            end = self.now_ms  # paused: the invocation is still in flight
        self._seen(start, end)
        node = NodeItem(
            row=row,
            start_ms=start,
            end_ms=end,
            retries=retries.get(id(row), []),
            pauses=pauses.get(invocation, []),
        )
        for pause in node.pauses:
            self._seen(pause.start_ms, pause.end_ms)
        own_agents = [
            self._node(r, retries, sub_agents, children, pauses)
            for r in sub_agents.get(invocation, [])
        ]
        own_runs = list(children.get(invocation, []))
        output = row.get("output")
        records = output.get("tool_calls") if isinstance(output, dict) else None
        for record in records if isinstance(records, list) else []:
            if not isinstance(record, dict):
                continue
            if record.get("name") == COMPRESSION:
                node.calls.append(_compression(record))
                continue
            call = ToolItem(
                record=record,
                start_ms=ms_of(record.get("started_at")),
                end_ms=ms_of(record.get("finished_at")),
            )
            self._seen(call.start_ms, call.end_ms)
            label = record.get("sub_agent_label")
            if label:
                found = next((a for a in own_agents if a.row.get("node_label") == label), None)
                if found is not None:
                    own_agents.remove(found)
                    call.sub_agents.append(found)
            name = record.get("workflow_name")
            if record.get("source") == "sub_workflow" and name:
                match = next((r for r in own_runs if r.run.get("workflow_name") == name), None)
                if match is not None:
                    own_runs.remove(match)
                    call.runs.append(match)
            node.calls.append(call)
        node.sub_agents = own_agents
        node.runs = own_runs
        return node


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _compression(record: dict[str, Any]) -> Compression:
    args = record.get("arguments")
    result = record.get("result")
    args = args if isinstance(args, dict) else {}
    result = result if isinstance(result, dict) else {}
    elapsed = record.get("elapsed_ms")
    return Compression(
        messages=_int(args.get("messages_compressed")) or 0,
        tokens_before=_int(result.get("tokens_before")),
        tokens_after=_int(result.get("tokens_after")),
        elapsed_ms=float(elapsed) if isinstance(elapsed, int | float) else None,
    )


def build(data: RunData, now_ms: int) -> tuple[RunItem, Axis]:
    """The run's timeline and the axis every bar of it (nested ones too) is drawn on."""
    builder = _Builder(now_ms)
    root = builder.run(data)
    times = builder.times or [now_ms]
    start = root.start_ms if root.start_ms is not None else min(times)
    return root, Axis(start_ms=min(start, min(times)), end_ms=max(times))
