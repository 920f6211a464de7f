"""The speed targets (issue #18's table) checked against a run's figures, and a comparison
with the figures of a previous run (the JSON `HEYM_BENCH_OUT` wrote), so regressions show.

Both only print: benchmarks never assert.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench.harness import Figure

Getter = Callable[[Figure], float | None]


def _p50(f: Figure) -> float | None:
    return f.p50


def _value(f: Figure) -> float | None:
    return f.value


def _param(key: str) -> Getter:
    def get(f: Figure) -> float | None:
        v = f.params.get(key)
        return float(v) if isinstance(v, int | float) else None

    return get


@dataclass(frozen=True)
class Target:
    row: str
    figure: str  # a regular expression over figure names
    get: Getter
    at_most: float | None = None
    at_least: float | None = None
    unit: str = ""

    def check(self, f: Figure) -> tuple[float | None, bool | None]:
        v = self.get(f)
        if v is None:
            return None, None
        if self.at_most is not None:
            return v, v <= self.at_most
        return v, v >= (self.at_least or 0)

    @property
    def bound(self) -> str:
        if self.at_most is not None:
            return f"<= {self.at_most:g} {self.unit}".rstrip()
        return f">= {self.at_least:g} {self.unit}".rstrip()


TARGETS = [
    Target(
        "side-effecting (HTTP) node, per node p50",
        r"engine overhead, 10-node chain of HTTP",
        _p50,
        at_most=3,
        unit="ms",
    ),
    Target(
        "agent loop, per tool iteration p50",
        r"agent loop overhead per tool iteration",
        _p50,
        at_most=9.5,
        unit="ms",
    ),
    Target(
        "agent loop, LangGraph over Heym (peers)",
        r"LangGraph agent loop",
        _param("peer_over_heym_p50"),
        at_least=2,
        unit="x",
    ),
    Target(
        "parallel sub-agents, wall / slowest",
        r"orchestrator with 4 sub-agents",
        _param("ratio_to_slowest_p50"),
        at_most=1.1,
        unit="x",
    ),
    Target("3-node run over REST p50", r"3-node workflow over REST", _p50, at_most=8, unit="ms"),
    Target(
        "pure-node chain, per node p50",
        r"engine overhead, 50-node chain of set",
        _p50,
        at_most=0.25,
        unit="ms",
    ),
    Target(
        "10-node throughput, one replica",
        r"10-node workflow throughput",
        _value,
        at_least=400,
        unit="runs/s",
    ),
    Target(
        "replay of a 100,000-event run",
        r"replay, run of 100,000 events",
        _value,
        at_least=40_000,
        unit="events/s",
    ),
    Target(
        "set chain over REST, per node p50",
        r"set chain of \d+ nodes over REST",
        _p50,
        at_most=0.25,
        unit="ms",
    ),
    Target(
        "memory: growth under load",
        r"memory of ",
        _param("growth_under_load_mb"),
        at_most=50,
        unit="MB",
    ),
    Target(
        "memory: after load minus idle",
        r"memory of ",
        _param("after_minus_idle_mb"),
        at_most=10,
        unit="MB",
    ),
]


def _creation_linearity(figures: Sequence[Figure]) -> list[tuple[str, str, str, str, str]]:
    """Creation is linear when the per-node creation time does not grow with size."""
    per_node: list[tuple[int, float]] = []
    for f in figures:
        m = re.match(r"create a (\d+)-node workflow", f.name)
        if m and f.p50 is not None:
            per_node.append((int(m.group(1)), f.p50 / int(m.group(1))))
    if len(per_node) < 2:
        return []
    per_node.sort()
    ratio = per_node[-1][1] / per_node[0][1]
    shown = f"{ratio:.2f}x ({per_node[0][0]} -> {per_node[-1][0]} nodes)"
    met = "met" if ratio <= 1.5 else "NOT met"
    return [
        (
            "workflow creation linear (per-node ratio)",
            "create a n-node workflow",
            shown,
            "<= 1.5x",
            met,
        )
    ]


def targets_report(figures: Sequence[Figure]) -> str:
    rows: list[tuple[str, str, str, str, str]] = []
    for t in TARGETS:
        for f in figures:
            if not re.search(t.figure, f.name):
                continue
            v, ok = t.check(f)
            if v is None:
                continue
            status = "met" if ok else "NOT met"
            rows.append((t.row, f.name, f"{v:,.3f}".rstrip("0").rstrip("."), t.bound, status))
    rows.extend(_creation_linearity(figures))
    if not rows:
        return ""
    return "targets (issue #18)\n" + _table(("row", "figure", "now", "target", ""), rows)


def load_previous(path: str | None) -> list[dict[str, Any]]:
    if not path:
        return []
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return []
    return (
        [d for d in data if isinstance(d, dict) and "name" in d] if isinstance(data, list) else []
    )


def _main_metric(d: dict[str, Any]) -> float | None:
    v = d.get("p50") if d.get("p50") is not None else d.get("value")
    return float(v) if isinstance(v, int | float) else None


def comparison_report(figures: Sequence[Figure], previous: list[dict[str, Any]]) -> str:
    """Each figure against the same one last time (p50, else value); worse by 25 % is flagged."""
    before = {d["name"]: d for d in previous}
    rows: list[tuple[str, str, str, str, str]] = []
    for f in figures:
        old = before.get(f.name)
        if old is None:
            continue
        was, now = _main_metric(old), _main_metric(f.__dict__)
        if was is None or now is None or was == 0:
            continue
        higher_is_better = f.unit.endswith("/s")
        change = (now - was) / abs(was)
        worse = -change if higher_is_better else change
        flag = "REGRESSED" if worse > 0.25 else ("better" if worse < -0.25 else "")
        metric = "p50" if f.p50 is not None else "value"
        rows.append(
            (f"{f.name} ({metric}, {f.unit})", f"{was:,.3f}", f"{now:,.3f}", f"{change:+.0%}", flag)
        )
    if not rows:
        return ""
    title = "compared with the previous run (worse by more than 25 % is flagged; figures are noisy)"
    return title + "\n" + _table(("figure", "before", "now", "change", ""), rows)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    all_rows = [header, *rows]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in all_rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
