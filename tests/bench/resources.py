"""Memory and CPU of the running services, read from /proc: RSS of each service process
sampled while a benchmark runs (peak) and at rest (idle before, after), and the CPU time the
services spent under the load (per run, the figure that stays stable on a shared machine)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from tests.bench.harness import Figure
from tests.e2e.system import System


def rss_mb(pid: int | None) -> float | None:
    """Resident set size of one process in MB (VmRSS), or None if it is gone."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of one process so far (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def cpu_snapshot(system: System) -> dict[str, float]:
    return {name: cpu_s(child.pid) for name, child in system.children.items()}


def snapshot(system: System) -> dict[str, float]:
    """RSS per service process (the process itself, not the tools it may spawn)."""
    found: dict[str, float] = {}
    for name, child in system.children.items():
        mb = rss_mb(child.pid)
        if mb is not None:
            found[name] = mb
    return found


class MemoryProfile:
    """Idle, peak under load, and after: per service, in MB."""

    def __init__(self, system: System) -> None:
        self._system = system
        self.idle: dict[str, float] = {}
        self.peak: dict[str, float] = {}
        self.after: list[dict[str, float]] = []
        self.cpu: dict[str, float] = {}

    def mark_idle(self) -> None:
        self.idle = snapshot(self._system)

    @contextlib.asynccontextmanager
    async def under_load(self, interval_s: float = 0.05) -> AsyncIterator[None]:
        async def sample() -> None:
            while True:
                for name, mb in snapshot(self._system).items():
                    self.peak[name] = max(self.peak.get(name, 0.0), mb)
                await asyncio.sleep(interval_s)

        task = asyncio.create_task(sample())
        cpu_before = cpu_snapshot(self._system)
        try:
            yield
        finally:
            for name, spent in cpu_snapshot(self._system).items():
                self.cpu[name] = self.cpu.get(name, 0.0) + spent - cpu_before.get(name, 0.0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def mark_after(self, settle_s: float = 2.0) -> None:
        await asyncio.sleep(settle_s)
        self.after.append(snapshot(self._system))

    def cpu_ms_per_run(self, runs: int) -> dict[str, float]:
        """CPU ms per run of each service under the load (and `total`)."""
        per = {name: round(s * 1000 / runs, 3) for name, s in sorted(self.cpu.items()) if s}
        per["total"] = round(sum(self.cpu.values()) * 1000 / runs, 3)
        return per

    def figures(self, load: str, runs_per_round: int) -> list[Figure]:
        out: list[Figure] = []
        for name in sorted(self.idle):
            idle = self.idle[name]
            peak = self.peak.get(name, idle)
            afters = [a[name] for a in self.after if name in a]
            last = afters[-1] if afters else idle
            params: dict[str, object] = {
                "idle_mb": round(idle, 1),
                "peak_mb": round(peak, 1),
                "after_mb": round(last, 1),
                "growth_under_load_mb": round(peak - idle, 1),
                "after_minus_idle_mb": round(last - idle, 1),
                "load": load,
            }
            if len(afters) >= 2:
                # A leak per run shows as growth between two identical rounds of load.
                per_run_kb = (afters[-1] - afters[-2]) * 1024 / runs_per_round
                params["kb_per_run_between_rounds"] = round(per_run_kb, 2)
            out.append(
                Figure(name=f"memory of {name}", unit="MB", value=round(last, 1), params=params)
            )
        return out
