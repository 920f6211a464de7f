"""Service child processes: start, watch, restart on death, stop cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from libs.embedded.process import die_with_parent

log = logging.getLogger(__name__)


class Child:
    """One `python -m <module>` process (a service by default) with its log and restarts."""

    def __init__(
        self, name: str, env: dict[str, str], log_dir: Path, *, argv: list[str] | None = None
    ) -> None:
        self.name = name
        self.argv = argv or ["-m", f"services.{name}"]
        self.env = env
        self.log_path = log_dir / f"{name}.log"
        self.process: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self.started_at = 0.0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    async def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        logfile = self.log_path.open("ab")
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                *self.argv,
                env=self.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=logfile,
                stderr=logfile,
                preexec_fn=die_with_parent(),
            )
        finally:
            logfile.close()
        self.started_at = time.monotonic()

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def stop(self, grace: float) -> None:
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            log.warning("%s did not stop within %.0fs; killing it", self.name, grace)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


async def watch(
    child: Child,
    *,
    stopping: asyncio.Event,
    on_event: Callable[[str], None],
) -> None:
    """Restart `child` whenever it dies until `stopping` is set (back-off 1 s doubling to 30 s)."""
    backoff = 1.0
    while not stopping.is_set():
        proc = child.process
        if proc is None:
            return
        code = await proc.wait()
        if stopping.is_set():
            return
        ran_for = time.monotonic() - child.started_at
        if ran_for > 60:
            backoff = 1.0
        tail = child.log_tail()
        on_event(
            f"{child.name} (pid {proc.pid}) exited with code {code} after {ran_for:.1f}s; "
            f"restarting in {backoff:.0f}s. Last log lines:\n{tail}"
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), backoff)
        if stopping.is_set():
            return
        backoff = min(backoff * 2, 30.0)
        child.restarts += 1
        await child.start()
        on_event(f"{child.name} restarted (pid {child.pid}, restart #{child.restarts})")


def child_env(base: dict[str, str], **overrides: str) -> dict[str, str]:
    env = dict(base)
    env.update(overrides)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def current_env() -> dict[str, str]:
    return dict(os.environ)
