"""The run detail's timeline from read-model rows (pure): nesting of sub-agents and
sub-workflows, retries, compressions, pauses as gaps, one axis; and its HTML escapes."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest

from services.gateway.inspector.run_reads import RunData
from services.gateway.inspector.timeline import Compression, ToolItem, build
from services.gateway.inspector.timeline_html import timeline

pytestmark = pytest.mark.unit

T0 = 1_700_000_000_000


def at(ms: int) -> datetime:
    return datetime.fromtimestamp((T0 + ms) / 1000, UTC)


def iso(ms: int) -> str:
    return at(ms).isoformat()


def run(run_id: str = "r1", status: str = "success", **extra: Any) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "workflow_id": "w",
        "workflow_name": "flow",
        "status": status,
        "requested_at": at(0),
        "started_at": at(0),
        "finished_at": at(1000) if status not in ("running", "pending") else None,
        "parent_invocation_id": None,
        **extra,
    }


def row(
    inv: str, label: str, start: int, end: int, *, seq: int, ntype: str = "set", **meta: Any
) -> dict[str, Any]:
    return {
        "invocation_id": inv,
        "node_id": label,
        "node_label": label,
        "node_type": ntype,
        "status": meta.pop("status", "success"),
        "output": meta.pop("output", {}),
        "error": meta.pop("error", None),
        "execution_time_ms": float(end - start),
        "metadata": {
            "invocation_id": inv,
            "started_at_ms": T0 + start,
            "ended_at_ms": T0 + end,
            "attempt": 1,
            **meta,
        },
        "sequence": seq,
    }


def tool(name: str, start: int, end: int, **extra: Any) -> dict[str, Any]:
    return {
        "tool_call_id": f"c-{name}-{start}",
        "name": name,
        "arguments": '{"q": 1}',
        "result": {"ok": True},
        "status": "success",
        "source": extra.pop("source", "python"),
        "started_at": iso(start),
        "finished_at": iso(end),
        "elapsed_ms": float(end - start),
        **extra,
    }


def test_parallel_rows_share_one_axis_and_overlap() -> None:
    data = RunData(
        run=run(),
        nodes=[
            row("i1", "a", 0, 600, seq=1000),
            row("i2", "b", 100, 900, seq=2000),
        ],
    )
    root, axis = build(data, T0 + 5000)
    assert (axis.start_ms, axis.end_ms) == (T0, T0 + 1000)
    a, b = root.nodes
    assert axis.x(a.start_ms or 0) < axis.x(b.end_ms or 0)
    assert axis.x(b.start_ms or 0) < axis.x(a.end_ms or 0)
    html = timeline(root, axis, T0 + 5000)
    bars = re.findall(r'<rect class="bar s-success" x="([\d.]+)" y="2" width="([\d.]+)"', html)
    assert bars == [("0.0", "600.0"), ("100.0", "800.0")]


def test_agent_calls_sub_agents_compressions_and_child_runs_nest() -> None:
    agent_output = {
        "text": "done",
        "tool_calls": [
            tool("call_sub_agent", 100, 400, source="sub_agent", sub_agent_label="helper"),
            {
                "name": "_context_compression",
                "arguments": {"messages_compressed": 6},
                "result": {"tokens_before": 1700, "tokens_after": 900},
                "elapsed_ms": 12.0,
            },
            tool("call_sub_workflow", 450, 700, source="sub_workflow", workflow_name="child"),
            tool("lookup", 710, 720),
        ],
    }
    child = RunData(
        run=run("r2", parent_run_id="r1", parent_invocation_id="ia", workflow_name="child"),
        nodes=[row("c1", "inner", 460, 690, seq=1000)],
    )
    stray = RunData(run=run("r3", parent_run_id="r1", parent_invocation_id="gone"))
    data = RunData(
        run=run(),
        nodes=[
            row("ia", "planner", 50, 800, seq=5000, ntype="agent", output=agent_output),
            row(
                "ih",
                "helper",
                120,
                390,
                seq=2000,
                ntype="agent",
                invocation="sub_agent_tool",
                parent_invocation_id="ia",
            ),
        ],
        children=[child, stray],
    )
    root, _ = build(data, T0 + 5000)
    assert [n.row["node_label"] for n in root.nodes] == ["planner"]  # the helper is nested
    planner = root.nodes[0]
    kinds = [type(c).__name__ for c in planner.calls]
    assert kinds == ["ToolItem", "Compression", "ToolItem", "ToolItem"]
    delegate, squeeze, sub_workflow, _ = planner.calls
    assert isinstance(delegate, ToolItem)
    assert [s.row["node_label"] for s in delegate.sub_agents] == ["helper"]
    assert isinstance(squeeze, Compression)
    assert (squeeze.messages, squeeze.tokens_before, squeeze.tokens_after) == (6, 1700, 900)
    assert isinstance(sub_workflow, ToolItem)
    assert [r.run["run_id"] for r in sub_workflow.runs] == ["r2"]
    assert [r.run["run_id"] for r in root.loose_runs] == ["r3"]  # its node has no row
    html = timeline(*build(data, T0 + 5000), T0 + 5000)
    assert "Context compressed (" in html
    assert '<span data-num="6">6</span> messages → summary)' in html
    assert 'data-sub-agent="helper"' in html
    assert 'data-run-id="r2"' in html


def test_failed_attempts_belong_to_the_next_row_of_their_node() -> None:
    retry = row("i1", "flaky", 0, 10, seq=1000, retry_stage="attempt_failed", status="error")
    retry["metadata"].update(retry_attempt=1, retry_max_attempts=3, retry_wait_seconds=0.5)
    retry["error"] = "HTTP 503"
    final = row("i2", "flaky", 600, 700, seq=3000)
    still_failing = row("i3", "other", 0, 5, seq=2000, retry_stage="attempt_failed")
    root, axis = build(RunData(run=run(), nodes=[retry, final, still_failing]), T0 + 5000)
    flaky = next(n for n in root.nodes if n.row["node_label"] == "flaky")
    assert flaky.row is final
    assert flaky.retries == [retry]
    assert [n.row["node_label"] for n in root.nodes] == ["other", "flaky"]
    html = timeline(root, axis, T0 + 5000)
    assert "failed: HTTP 503; retried after" in html


def test_a_pause_is_a_gap_until_the_decision_and_a_pending_bar_runs_to_now() -> None:
    now = T0 + 10_000
    data = RunData(
        run=run(status="pending"),
        nodes=[row("ia", "writer", 100, 300, seq=1000, ntype="agent", status="pending")],
        pauses=[
            {
                "invocation_id": "ia",
                "created_at": at(300),
                "resolved_at": None,
                "status": "pending",
                "review_url": "https://heym.example/review/tok",
            }
        ],
    )
    root, axis = build(data, now)
    writer = root.nodes[0]
    assert (writer.end_ms, axis.end_ms) == (now, now)
    assert writer.pauses[0].end_ms is None
    html = timeline(root, axis, now)
    gap = re.search(r'<rect class="gap" x="([\d.]+)" y="2" width="([\d.]+)"', html)
    assert gap is not None
    assert float(gap.group(1)) == pytest.approx(30.0)  # 300 ms of 10 s
    assert float(gap.group(2)) == pytest.approx(970.0)  # until now
    assert 'href="https://heym.example/review/tok"' in html


def test_every_stored_value_is_escaped() -> None:
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    output = {
        "text": "[x](javascript:alert(3)) <script>alert(4)</script>",
        "tool_calls": [tool(hostile, 10, 20, source=hostile, result={hostile: hostile})],
    }
    data = RunData(
        run=run(),
        nodes=[row("i<1>", hostile, 0, 50, seq=1000, ntype="agent", output=output, error=hostile)],
        pauses=[
            {
                "invocation_id": "i<1>",
                "created_at": at(20),
                "resolved_at": at(30),
                "status": "decided",
                "review_url": "javascript:alert(5)",
            }
        ],
    )
    html = timeline(*build(data, T0 + 5000), T0 + 5000)
    parsed = Elements()
    parsed.feed(html)
    assert {"script", "img"}.isdisjoint(parsed.tags)
    assert not [a for a in parsed.attributes if a.startswith("on")]
    assert all(h.startswith(("/ui/", "https://", "http://")) for h in parsed.hrefs), parsed.hrefs
    assert hostile in parsed.text  # shown, as text


class Elements(HTMLParser):
    """What a browser would build from the HTML: its tags, attribute names, links, text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.hrefs: list[str] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            self.attributes.add(name)
            if name == "href":
                self.hrefs.append(value or "")

    def handle_data(self, data: str) -> None:
        self.text += data
