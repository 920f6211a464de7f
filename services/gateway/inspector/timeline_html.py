"""The timeline as HTML: one `<details>` row per node whose summary holds its bar (an SVG
drawn on the run's axis: no inline style, so the CSP needs none), expanding to the node's
facts, answer, error, retries, tool calls, sub-agents and sub-workflows (nested rows on the
same axis). Pauses for a human review and waits are drawn as dashed gaps."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from services.gateway.inspector.fragments import (
    badge,
    duration,
    json_block,
    mapping,
    number,
    safe_link,
    status_class,
    when,
)
from services.gateway.inspector.timeline import Axis, Compression, NodeItem, RunItem, ToolItem
from services.gateway.web.markdown import render_markdown

# Characters of JSON one page shows in all (each block is also cut on its own).
PAGE_JSON_BUDGET = 1_500_000
_MIN_BAR = 2.0  # an instantaneous node still shows as a tick
_AGENT_TYPES = {"agent", "llm"}
MAX_DEPTH_CLASS = 8


class Budget:
    def __init__(self, chars: int = PAGE_JSON_BUDGET) -> None:
        self.left = chars

    def block(self, value: Any, label: str) -> str:
        if self.left <= 0:
            return "<p class=meta>Not shown (this page shows enough already); see the API.</p>"
        html = json_block(value, label=label, limit=min(8_000, self.left))
        self.left -= len(html)
        return html


def _rect(axis: Axis, start: int, end: int, cls: str) -> str:
    x = axis.x(start)
    width = max(_MIN_BAR, axis.x(end) - x)
    x = min(x, 1000.0 - width)
    return f'<rect class="{cls}" x="{x:.1f}" y="2" width="{width:.1f}" height="10"/>'


def track(
    axis: Axis,
    start: int | None,
    end: int | None,
    status: str | None,
    gaps: list[tuple[int, int]] | None = None,
    *,
    wait: bool = False,
) -> str:
    shapes = ""
    if start is not None:
        cls = "wait" if wait else f"bar {status_class(status)}"
        shapes = _rect(axis, start, end if end is not None else start, cls)
        for gap_start, gap_end in gaps or []:
            shapes += _rect(axis, gap_start, gap_end, "gap")
    return (
        '<svg class=track viewBox="0 0 1000 14" preserveAspectRatio=none aria-hidden=true>'
        f"{shapes}</svg>"
    )


def axis_row(axis: Axis) -> str:
    ticks = "".join(
        f"<span class=t{p}>{duration(axis.span_ms * p / 100) if p else '0'}</span>"
        for p in (0, 25, 50, 75, 100)
    )
    return (
        "<div class=tl-axis><span>Node</span>"
        f"<div class=tl-ticks>{ticks}</div><span class=tl-dur>Duration</span></div>"
    )


def _gaps(node: NodeItem, now_ms: int) -> list[tuple[int, int]]:
    return [(p.start_ms, p.end_ms if p.end_ms is not None else now_ms) for p in node.pauses]


def _facts(pairs: list[tuple[str, str]]) -> str:
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in pairs if v)
    return f"<dl class=facts>{rows}</dl>"


def _arguments(value: Any) -> Any:
    """Stored arguments are a JSON string as the model sent it (redacted): shown parsed."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _depth(depth: int) -> str:
    """How deep a row is nested (its name column is narrower by as much, so every bar
    stays on the run's axis)."""
    return f"d{min(depth, MAX_DEPTH_CLASS)}"


class Renderer:
    def __init__(self, axis: Axis, now_ms: int, budget: Budget | None = None) -> None:
        self.axis = axis
        self.now_ms = now_ms
        self.budget = budget or Budget()

    def run(self, item: RunItem, depth: int = 0) -> str:
        rows = "".join(self.node(n, depth) for n in item.nodes)
        rows += "".join(self.nested_run(r, depth) for r in item.loose_runs)
        if not rows:
            rows = "<p class=meta id=no-nodes>No node has finished yet.</p>"
        return rows

    def nested_run(self, item: RunItem, depth: int) -> str:
        run = item.run
        rid = escape(str(run["run_id"]))
        link = f'<a href="/ui/runs/{rid}">{escape(run["workflow_name"] or "sub-workflow")}</a>'
        return (
            f'<div class="tl-nested {_depth(depth)}" data-run-id="{rid}">'
            f"<h4>Sub-workflow {link} {badge(run['status'])}</h4>{self.run(item, depth)}</div>"
        )

    def node(self, node: NodeItem, depth: int = 0) -> str:
        row = node.row
        meta = mapping(row.get("metadata"))
        label = str(row.get("node_label") or row.get("node_id") or "")
        ntype = str(row.get("node_type") or "")
        status = str(row.get("status") or "")
        invocation = str(meta.get("invocation_id") or row.get("invocation_id") or "")
        bar = track(
            self.axis,
            node.start_ms,
            node.end_ms,
            status,
            _gaps(node, self.now_ms),
            wait=ntype == "wait",
        )
        summary = (
            f"<summary><span class=tl-name><span class=label>{escape(label)}</span>"
            f"<span class=type>{escape(ntype)}</span></span>{bar}<span class=tl-dur>"
            f"{badge(status)} <span class=took>{duration(row.get('execution_time_ms'))}</span>"
            "</span></summary>"
        )
        body = self._node_body(node, meta, ntype, depth + 1)
        return (
            f'<details class="tl-row {_depth(depth)}" id="node-{escape(invocation)}" '
            f'data-label="{escape(label)}" data-type="{escape(ntype)}" '
            f'data-status="{escape(status)}">{summary}<div class=tl-body>{body}</div></details>'
        )

    def _node_body(self, node: NodeItem, meta: dict[str, Any], ntype: str, depth: int) -> str:
        row = node.row
        output = row.get("output")
        out = output if isinstance(output, dict) else {}
        agent = ntype in _AGENT_TYPES
        parts = [
            _facts(
                [
                    ("Started", when(meta.get("started_at_ms"))),
                    ("Ended", when(meta.get("ended_at_ms"))),
                    ("Attempt", number(meta.get("attempt")) if meta.get("attempt") else ""),
                    ("Model", escape(str(out["model"])) if agent and out.get("model") else ""),
                    ("Tokens", self._usage(out) if agent else ""),
                ]
            )
        ]
        for pause in node.pauses:
            link = safe_link(pause.url)
            open_link = (
                f' <a class=review-link href="{escape(link)}" rel="noopener noreferrer">'
                "Open the review page</a>"
                if link and pause.status == "pending"
                else ""
            )
            parts.append(
                f"<p class=kv>Paused for a human review from {when(pause.start_ms)}"
                f" to {when(pause.end_ms) if pause.end_ms else 'now'}"
                f" ({escape(pause.status)}).{open_link}</p>"
            )
        if row.get("error"):
            parts.append(f"<h3>Error</h3><pre class=json>{escape(str(row['error']))}</pre>")
        for retry in node.retries:
            rmeta = mapping(retry.get("metadata"))
            parts.append(
                "<p class='kv retry'>Attempt "
                f"{number(rmeta.get('retry_attempt'))} of {number(rmeta.get('retry_max_attempts'))}"
                f" failed: {escape(str(retry.get('error') or ''))}; retried after "
                f"{duration((rmeta.get('retry_wait_seconds') or 0) * 1000)}.</p>"
            )
        if ntype in _AGENT_TYPES and isinstance(out.get("text"), str) and out["text"]:
            parts.append(
                f"<h3>Answer</h3><div class=agent-text>{render_markdown(out['text'])}</div>"
            )
        if node.calls:
            parts.append(f"<h3>Tool calls{self._metrics(out)}</h3>")
            parts.extend(
                self.compression(c, depth) if isinstance(c, Compression) else self.tool(c, depth)
                for c in node.calls
            )
        for sub in node.sub_agents:
            parts.append(self._sub_agent(sub, depth))
        parts.extend(self.nested_run(r, depth) for r in node.runs)
        parts.append(
            "<details class=block><summary>Output</summary>"
            f"{self.budget.block(output, 'output')}</details>"
        )
        return "".join(parts)

    @staticmethod
    def _usage(out: dict[str, Any]) -> str:
        usage = out.get("usage")
        if not isinstance(usage, dict) or not usage.get("total_tokens"):
            return ""
        return (
            f"{number(usage.get('prompt_tokens'))} in, {number(usage.get('completion_tokens'))}"
            f" out, {number(usage.get('total_tokens'))} total"
        )

    @staticmethod
    def _metrics(out: dict[str, Any]) -> str:
        metrics = out.get("tool_metrics")
        if not isinstance(metrics, dict):
            return ""
        return (
            f" <span class=meta>({number(metrics.get('count'))} calls, "
            f"{number(metrics.get('success'))} succeeded, {number(metrics.get('error'))} failed)"
            "</span>"
        )

    def _sub_agent(self, sub: NodeItem, depth: int) -> str:
        label = str(sub.row.get("node_label") or "")
        return (
            f'<div class="tl-nested {_depth(depth)}" data-sub-agent="{escape(label)}">'
            f"<h4>Sub-agent {escape(label)}</h4>{self.node(sub, depth)}</div>"
        )

    def compression(self, c: Compression, depth: int) -> str:
        tokens = ""
        if c.tokens_before is not None and c.tokens_after is not None:
            tokens = f"; about {number(c.tokens_before)} → {number(c.tokens_after)} tokens"
        return (
            f"<div class='tl-note compression {_depth(depth)}' data-compression>"
            f"<span class=what>Context compressed ({number(c.messages)} messages → summary)"
            f"{tokens}</span><span class=tl-dur>{duration(c.elapsed_ms)}</span></div>"
        )

    def tool(self, call: ToolItem, depth: int) -> str:
        r = call.record
        name = str(r.get("name") or "")
        status = str(r.get("status") or "")
        source = str(r.get("source") or "")
        bar = track(self.axis, call.start_ms, call.end_ms, status)
        summary = (
            f"<summary><span class=tl-name><span class=label>{escape(name)}</span>"
            f"<span class=type>{escape(source)}</span></span>{bar}"
            f"<span class=tl-dur>{badge(status)} <span class=took>{duration(r.get('elapsed_ms'))}"
            "</span></span></summary>"
        )
        facts = _facts(
            [
                ("Call id", f"<span class=mono>{escape(str(r.get('tool_call_id') or ''))}</span>"),
                ("Source", escape(source)),
                ("Status", badge(status)),
                ("Started", when(r.get("started_at"))),
                ("Finished", when(r.get("finished_at"))),
                ("Elapsed", duration(r.get("elapsed_ms"))),
                ("MCP server", escape(str(r.get("mcp_server") or ""))),
                ("Workflow", escape(str(r.get("workflow_name") or ""))),
                ("Sub-agent", escape(str(r.get("sub_agent_label") or ""))),
            ]
        )
        arguments = self.budget.block(_arguments(r.get("arguments")), "arguments")
        body = (
            f"{facts}<h3>Arguments</h3>{arguments}"
            f"<h3>Result</h3>{self.budget.block(r.get('result'), 'result')}"
        )
        body += "".join(self._sub_agent(s, depth + 1) for s in call.sub_agents)
        body += "".join(self.nested_run(run, depth + 1) for run in call.runs)
        return (
            f'<details class="tl-row tl-tool {_depth(depth)}" data-tool="{escape(name)}" '
            f'data-status="{escape(status)}">{summary}<div class=tl-body>{body}</div></details>'
        )


def timeline(root: RunItem, axis: Axis, now_ms: int, budget: Budget | None = None) -> str:
    renderer = Renderer(axis, now_ms, budget)
    return f"<div class=timeline id=timeline-rows>{axis_row(axis)}{renderer.run(root)}</div>"
