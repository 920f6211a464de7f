"""`task bench:profile -- <row>`: one benchmark's load with py-spy recording every service.

Prints, per service, the functions with the largest share of samples (self, and inclusive of
what they call), so a row's remaining cost is explained by a profile, not a guess. Raw stacks
are kept in `HEYM_PROFILE_DIR` (default a temporary directory) for flame graphs.
"""

from __future__ import annotations

import asyncio
import collections
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from libs.eventlog import EventLog
from libs.testing.http_target import HttpTarget
from libs.testing.infra import connected
from libs.testing.model_server import ModelServer
from tests.bench import agent_bench
from tests.bench.size_bench import one_size
from tests.bench.workflow_bench import chain, per_node, rest_three_node, running_system, throughput
from tests.e2e.system import System

Load = Callable[[System, EventLog, str], Awaitable[object]]


async def _agent(system: System, _log: EventLog, _target: str) -> object:
    with ModelServer(agent_bench.agent_script(20)) as server:
        _, key = await system.new_user()
        async with httpx.AsyncClient(
            base_url=system.base_url, headers={"X-MCP-Key": key}, timeout=120
        ) as c:
            cred = await agent_bench.add_credential(c, server)
            return await agent_bench.loop_overhead(system, c, cred, 20)


async def _subagents(system: System, _log: EventLog, _target: str) -> object:
    with ModelServer(agent_bench.agent_script(20)) as server:
        _, key = await system.new_user()
        async with httpx.AsyncClient(
            base_url=system.base_url, headers={"X-MCP-Key": key}, timeout=120
        ) as c:
            cred = await agent_bench.add_credential(c, server)
            return await agent_bench.parallel_sub_agents(system, c, cred)


async def _sizes(system: System, _log: EventLog, _target: str) -> object:
    _, key = await system.new_user()
    async with httpx.AsyncClient(
        base_url=system.base_url, headers={"X-MCP-Key": key}, timeout=120
    ) as c:
        return await one_size(c, 1000, 5)


LOADS: dict[str, Load] = {
    "http": lambda s, log, t: per_node(log, "http chain", chain("http", 9, t), 100),
    "set": lambda s, log, t: per_node(log, "set chain", chain("set", 49), 100),
    "rest3": lambda s, log, t: rest_three_node(s, 300),
    "throughput": lambda s, log, t: throughput(log, 1000, 50),
    "agent": _agent,
    "subagents": _subagents,
    "sizes": _sizes,
}
_SKIP = re.compile(r"asyncio/|runpy|run_service|selectors\.py|<module>|threading\.py")
# Leaves that mean a thread is waiting, not working (py-spy cannot always tell).
_IDLE = re.compile(
    r"^((Condition\.wait|Runner\.run|select|_run_once|Event\.wait) "
    r"|_worker \(concurrent/futures/thread\.py:81\))"  # a pool thread waiting for work
)


def summarize(raw: Path, top: int) -> str:
    self_counts: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        if _IDLE.match(frames[-1]):
            continue
        total += n
        self_counts[frames[-1]] += n
        for frame in set(frames):
            if not _SKIP.search(frame):
                incl[frame] += n
    if not total:
        return "  (no samples)"
    out = [f"  {total} busy samples"]
    out.append("  self:")
    out += [f"    {c / total:6.1%}  {f}" for f, c in self_counts.most_common(top)]
    out.append("  inclusive:")
    out += [f"    {c / total:6.1%}  {f}" for f, c in incl.most_common(top)]
    return "\n".join(out)


async def profile(row: str, out_dir: Path, top: int) -> None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    async with running_system() as system, connected(system.nats_url) as nc, HttpTarget() as target:
        log = EventLog(nc)
        await LOADS[row](system, log, target.url)  # warm-up
        procs = {}
        for name, child in system.children.items():
            raw = out_dir / f"{row}-{name}.txt"
            procs[name] = (
                await asyncio.create_subprocess_exec(
                    spy,
                    "record",
                    "--format",
                    "raw",
                    "--rate",
                    "250",
                    "--pid",
                    str(child.pid),
                    "--output",
                    str(raw),
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.DEVNULL,
                ),
                raw,
            )
        await asyncio.sleep(1)
        print(f"{row}: {await LOADS[row](system, log, target.url)}")
        for proc, _ in procs.values():
            proc.send_signal(signal.SIGINT)
        for proc, _ in procs.values():
            await proc.wait()
    for name, (_, raw) in procs.items():
        if raw.exists():
            print(f"\n{name} ({raw})\n{summarize(raw, top)}")


def main() -> None:
    rows = sys.argv[1:] or list(LOADS)
    out_dir = Path(os.environ.get("HEYM_PROFILE_DIR") or tempfile.mkdtemp(prefix="heym-prof-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    top = int(os.environ.get("HEYM_PROFILE_TOP", "15"))
    for row in rows:
        asyncio.run(profile(row, out_dir, top))


if __name__ == "__main__":
    main()
