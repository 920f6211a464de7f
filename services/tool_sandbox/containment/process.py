"""`run_contained`: one contained process, its output capped, killed on timeout or cancel.

The process starts in a session of its own, so killing the session kills everything it
started (inside bubblewrap the PID namespace dies with its first process anyway). Output
past its cap ends the process at once: a tool that prints 50 MB costs the sandbox the cap,
not 50 MB.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass

READY_MARK = b"\x00heym-launcher-ready\x00\n"
CHUNK = 64 * 1024


@dataclass
class Completed:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    elapsed_ms: float
    timed_out: bool = False
    overflow: str | None = None  # "stdout" or "stderr" when that stream passed its cap
    started: bool = False  # the launcher reported the interpreter up (see launcher.py)

    @property
    def signal(self) -> int | None:
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None


def kill_tree(pid: int) -> None:
    """SIGKILL the process's whole session (its group id is its pid)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


class _Capped:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0
        self.overflow = False

    def add(self, data: bytes) -> bool:
        room = self.cap - self.size
        if len(data) > room:
            self.parts.append(data[: max(room, 0)])
            self.size = self.cap
            self.overflow = True
            return False
        self.parts.append(data)
        self.size += len(data)
        return True

    def value(self) -> bytes:
        return b"".join(self.parts)


async def _pump(stream: asyncio.StreamReader, sink: _Capped, over: asyncio.Event) -> None:
    # Past the cap, keep reading and dropping until the killed process's pipe closes: an
    # unread pipe would keep asyncio from seeing the process end.
    while True:
        data = await stream.read(CHUNK)
        if not data:
            return
        if not sink.overflow and not sink.add(data):
            over.set()


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if data:
            proc.stdin.write(data)
            await proc.stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.close()


async def run_contained(
    argv: list[str],
    *,
    env: dict[str, str],
    stdin: bytes,
    timeout_s: float,
    max_stdout: int,
    max_stderr: int,
    cwd: str | None = None,
) -> Completed:
    clock = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = _Capped(max_stdout), _Capped(max_stderr + len(READY_MARK))
    over = asyncio.Event()
    readers = [
        asyncio.create_task(_pump(proc.stdout, out, over)),
        asyncio.create_task(_pump(proc.stderr, err, over)),
        asyncio.create_task(_feed(proc, stdin)),
    ]
    exited = asyncio.create_task(proc.wait())
    overflowed = asyncio.create_task(over.wait())
    timed_out = False
    try:
        done, _ = await asyncio.wait(
            {exited, overflowed}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            timed_out = True
        if exited not in done:
            kill_tree(proc.pid)
        else:
            kill_tree(proc.pid)  # anything it left running in its session goes too
        await asyncio.wait_for(exited, 5)
        # The pipes close once every holder is gone; a killed session releases them.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*readers, return_exceptions=True), 2)
    except BaseException:
        kill_tree(proc.pid)
        raise
    finally:
        overflowed.cancel()
        for task in readers:
            task.cancel()
    stderr = err.value()
    started = READY_MARK in stderr
    if started:
        stderr = stderr.replace(READY_MARK, b"", 1)
    stderr = stderr[:max_stderr]
    return Completed(
        returncode=proc.returncode,
        stdout=out.value(),
        stderr=stderr,
        elapsed_ms=round((time.perf_counter() - clock) * 1000, 3),
        timed_out=timed_out,
        overflow="stdout" if out.overflow else ("stderr" if err.overflow else None),
        started=started,
    )
