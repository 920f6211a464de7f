"""Benchmark plumbing: figures, percentiles, a table on stdout, JSON to `HEYM_BENCH_OUT`.

Benchmarks print; they never assert. Every benchmark reports figures in one format:
`{name, unit, p50, p95, p99, value, params}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import nats
from nats.aio.client import Client as NATS

from libs.embedded import EmbeddedNats, EmbeddedPostgres
from libs.eventlog import provision_run_stream
from libs.testing.model_server import Script
from libs.testing.model_server.__main__ import READY_PREFIX


@dataclass
class Figure:
    name: str
    unit: str
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    value: float | None = None
    params: dict[str, Any] = field(default_factory=dict)


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def latency(name: str, samples_s: Sequence[float], **params: Any) -> Figure:
    ms = [s * 1000 for s in samples_s]
    return Figure(
        name=name,
        unit="ms",
        p50=percentile(ms, 50),
        p95=percentile(ms, 95),
        p99=percentile(ms, 99),
        value=statistics.fmean(ms) if ms else None,
        params={"samples": len(ms), **params},
    )


def rate(name: str, count: int, seconds: float, unit: str = "events/s", **params: Any) -> Figure:
    return Figure(
        name=name,
        unit=unit,
        value=count / seconds if seconds else None,
        params={"count": count, "seconds": round(seconds, 3), **params},
    )


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3f}"


def report(figures: Sequence[Figure]) -> str:
    rows = [("benchmark", "unit", "p50", "p95", "p99", "value", "params")]
    for f in figures:
        params = ", ".join(f"{k}={v}" for k, v in f.params.items())
        rows.append((f.name, f.unit, _fmt(f.p50), _fmt(f.p95), _fmt(f.p99), _fmt(f.value), params))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(figures: Sequence[Figure]) -> None:
    out = os.environ.get("HEYM_BENCH_OUT")
    if out:
        Path(out).write_text(json.dumps([asdict(f) for f in figures], indent=2))


@contextlib.asynccontextmanager
async def bench_nats(*, durable: bool = True) -> AsyncIterator[NATS]:
    """A private nats-server; `durable=False` drops `sync_interval: always` (fast bulk loading)."""
    with tempfile.TemporaryDirectory(prefix="heym-bench-") as d:
        server = EmbeddedNats(Path(d))
        if not durable:
            server._write_config = _fast_config(server)  # type: ignore[method-assign]
        server.start()
        nc = await nats.connect(server.url)
        try:
            await provision_run_stream(nc)
            yield nc
        finally:
            await nc.close()
            server.stop()


def _fast_config(server: EmbeddedNats) -> Any:
    original = EmbeddedNats._write_config

    def write() -> Path:
        path = original(server)
        path.write_text(path.read_text().replace("  sync_interval: always\n", ""))
        return path

    return write


@contextlib.contextmanager
def bench_postgres() -> Any:
    with tempfile.TemporaryDirectory(prefix="heym-bench-pg-") as d:
        pg = EmbeddedPostgres(Path(d) / "pg", database="heym")
        url = pg.start()
        try:
            yield url
        finally:
            pg.stop()


@contextlib.asynccontextmanager
async def model_process(script: Script) -> AsyncIterator[str]:
    """The scripted model server in a process of its own (as a real model is remote): in the
    benchmark's own process it would share one interpreter lock with the load generator and
    slow both. Yields the base URL (`.../v1`)."""
    with tempfile.TemporaryDirectory(prefix="heym-bench-model-") as d:
        path = Path(d) / "script.json"
        path.write_bytes(msgspec.json.encode(script))
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "libs.testing.model_server",
            "--script",
            str(path),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            assert proc.stdout is not None
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            if not line.startswith(READY_PREFIX):
                raise RuntimeError(f"the model server did not start: {line!r}")
            yield line[len(READY_PREFIX) :].strip()
        finally:
            proc.terminate()
            await proc.wait()
