"""Drive `heym up` as a user would: a subprocess, its stdout, HTTP and NATS from outside."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from libs.embedded.process import free_port

READY = "Heym is ready"


@dataclass
class RunningStack:
    process: asyncio.subprocess.Process
    base_url: str
    nats_url: str
    data_dir: Path
    api_key: str
    output: list[str] = field(default_factory=list)
    pids: dict[str, int] = field(default_factory=dict)

    async def lines_until(self, needle: str, timeout: float = 60.0) -> str:
        async def read() -> str:
            assert self.process.stdout is not None
            while True:
                raw = await self.process.stdout.readline()
                if not raw:
                    raise AssertionError(
                        f"heym up exited before {needle!r}:\n" + "\n".join(self.output)
                    )
                line = raw.decode(errors="replace").rstrip()
                self.output.append(line)
                if needle in line:
                    return line

        return await asyncio.wait_for(read(), timeout)

    def parse_pids(self) -> None:
        for line in self.output:
            m = re.match(
                r"^((?:nats|postgres|model-server|scheduler|agent_runtime|tool_sandbox|review|"
                r"gateway)(?:#\d+)?(?: \(heym-\d+\))?)\s+(\d+)\s",
                line,
            )
            if m:
                self.pids[m.group(1)] = int(m.group(2))


def stack_env(data_dir: Path, api_key: str, http_port: int, nats_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEYM_")}
    env.update(
        HEYM_DATA_DIR=str(data_dir),
        HEYM_HTTP_PORT=str(http_port),
        HEYM_NATS_PORT=str(nats_port),
        HEYM_ADMIN_API_KEY=api_key,
        HEYM_SHUTDOWN_GRACE_S="5",
    )
    return env


@contextlib.asynccontextmanager
async def heym_up(
    data_dir: Path,
    api_key: str,
    *,
    http_port: int = 0,
    nats_port: int = 0,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> AsyncIterator[RunningStack]:
    http_port = http_port or free_port()
    nats_port = nats_port or free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "libs.devstack.cli",
        "up",
        *args,
        env={**stack_env(data_dir, api_key, http_port, nats_port), **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    stack = RunningStack(
        process=proc,
        base_url=f"http://127.0.0.1:{http_port}",
        nats_url=f"nats://127.0.0.1:{nats_port}",
        data_dir=data_dir,
        api_key=api_key,
    )
    try:
        await stack.lines_until(READY, timeout=120)
        stack.parse_pids()
        yield stack
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), 60)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie still answers kill(0); it is gone for every purpose here
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False
