"""Skills (Heym §6.1): the skill's files in a fresh workspace, its entry point run contained.

Runner: `uv run python` when the skill declares inline dependencies (PEP 723) or the sandbox
is set to always use uv (`HEYM_SKILL_RUNNER=uv`); the sandbox's interpreter otherwise, and
as the fallback when uv cannot resolve the dependencies offline (the result's metadata says
which ran, and why). Inside bubblewrap uv has no network: it first resolves from its cache;
on a miss the sandbox fetches the wheels outside the sandbox (`--no-build`: no package code
runs there) and tries once more.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from libs.tools.skill_files import (
    SkillError,
    decode_files,
    entry_point,
    inline_dependencies,
    parse_output,
    stdin_payload,
)
from services.tool_sandbox.containment.process import Completed, run_contained
from services.tool_sandbox.outcome import Outcome
from services.tool_sandbox.processes import BASE_PATH, ProcessRunner
from services.tool_sandbox.workspace import workspace

log = logging.getLogger(__name__)

# Stores a call's output files and rewrites the result (see output_files.py).
Publish = Callable[[Path, Any], Awaitable[tuple[Any, list[dict[str, Any]]]]]


def failure_message(done: Completed, *, what: str, timeout_s: float, memory_mb: int) -> str | None:
    """The clear error for a contained process that did not end well, or None."""
    if done.timed_out:
        return f"{what} execution timed out after {timeout_s:g} seconds"
    if done.overflow:
        return f"{what} wrote more than the sandbox keeps on {done.overflow}; output discarded"
    sig = done.signal
    if sig == signal.SIGXCPU:
        return f"{what} used up its CPU time limit"
    if sig == signal.SIGXFSZ:
        return f"{what} wrote a file larger than the sandbox allows"
    if sig is not None:
        return f"{what} was killed by signal {sig}"
    err = done.stderr.decode("utf-8", errors="replace")
    if done.returncode and "MemoryError" in err:
        return f"{what} ran out of memory (limit {memory_mb} MB)"
    if done.returncode and ("BlockingIOError" in err or "Resource temporarily unavailable" in err):
        return f"{what} tried to start more processes than the sandbox allows"
    return None


class SkillRunner:
    def __init__(self, processes: ProcessRunner, *, work_root: Path, runner: str) -> None:
        self.processes = processes
        self.work_root = work_root
        self.runner = runner  # auto | uv | python

    async def run(
        self,
        skill: dict[str, Any],
        arguments: dict[str, Any],
        *,
        timeout_s: float,
        slot: int,
        publish: Publish,
    ) -> Outcome:
        name = str(skill.get("name") or "skill")
        try:
            files = decode_files(skill)
            entry = entry_point([p for p, _ in files])
        except SkillError as exc:
            return Outcome.error(str(exc), extra={"skill": name})
        source = next(data for path, data in files if path == entry)
        deps = inline_dependencies(source.decode("utf-8", errors="replace"))
        use_uv = self.processes.uv_bin is not None and (
            self.runner == "uv" or (self.runner == "auto" and bool(deps))
        )
        ident = self.processes.containment.identity(slot)
        with workspace(self.work_root, files, ident) as ws:
            # No network unless the skill's config allows it (`allowNetwork: true`).
            network = skill.get("allowNetwork") is True
            done, extra = await self._execute(
                ws, entry, deps, use_uv, arguments, timeout_s=timeout_s, slot=slot, network=network
            )
            extra["skill"] = name
            memory_mb = self.processes.limits.memory_bytes // (1024 * 1024)
            problem = failure_message(done, what="Skill", timeout_s=timeout_s, memory_mb=memory_mb)
            stderr_text = done.stderr.decode("utf-8", errors="replace").strip()
            if stderr_text:
                log.info("skill %s stderr: %s", name, stderr_text[-2000:])
            if problem is not None:
                return Outcome.error(
                    problem, status="timeout" if done.timed_out else "error", extra=extra
                )
            if done.returncode:
                last = stderr_text.splitlines()[-1] if stderr_text else ""
                outcome = Outcome.error(
                    f"Skill failed (exit code {done.returncode}): {last}"[:2000], **extra
                )
                outcome.result["stderr"] = stderr_text[-4000:]
                return outcome
            result = parse_output(done.stdout, done.stderr)
            result, generated = await publish(ws, result)
            if generated:
                extra["generated_files"] = len(generated)
            return Outcome(result=result, extra=extra)

    async def _execute(
        self,
        ws: Path,
        entry: str,
        deps: list[str],
        use_uv: bool,
        arguments: dict[str, Any],
        *,
        timeout_s: float,
        slot: int,
        network: bool,
    ) -> tuple[Completed, dict[str, Any]]:
        stdin = stdin_payload(arguments)
        extra: dict[str, Any] = {}
        if use_uv:
            launch = self.processes.uv_launch(
                ws, script=entry, dependencies=deps, slot=slot, timeout_s=timeout_s
            )
            done = await self.processes.run(
                launch, ws, stdin=stdin, timeout_s=timeout_s, network=network
            )
            if done.started or done.timed_out:
                extra["runner"] = "uv"
                return done, extra
            if deps and await self._prefetch(deps, timeout_s):
                done = await self.processes.run(
                    launch, ws, stdin=stdin, timeout_s=timeout_s, network=network
                )
                if done.started or done.timed_out:
                    extra["runner"] = "uv"
                    return done, extra
            reason = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
            extra["runner_fallback"] = "uv could not prepare the skill's environment offline" + (
                f": {reason[-1][:300]}" if reason else ""
            )
        launch = self.processes.python_launch(
            ws, mode="run", script=entry, slot=slot, timeout_s=timeout_s, site=True
        )
        done = await self.processes.run(
            launch, ws, stdin=stdin, timeout_s=timeout_s, network=network
        )
        extra["runner"] = "python"
        return done, extra

    async def _prefetch(self, deps: list[str], timeout_s: float) -> bool:
        """Fill uv's cache for `deps` outside the sandbox; only wheels, no package code runs."""
        uv = self.processes.uv_bin
        assert uv is not None
        argv = [uv, "run", "--system-certs", "--no-project", "--no-build", "--quiet"]
        argv += ["--python", self.processes.containment.base_python]
        for dep in deps:
            argv += ["--with", dep]
        argv += ["python", "-I", "-S", "-c", ""]
        env = {
            "PATH": BASE_PATH,
            "HOME": str(self.processes.uv_cache),
            "UV_CACHE_DIR": str(self.processes.uv_cache),
            "UV_PYTHON_DOWNLOADS": "never",
            "UV_NO_PROGRESS": "1",
        }
        done = await run_contained(
            argv,
            env=env,
            stdin=b"",
            timeout_s=max(5.0, timeout_s),
            max_stdout=64 * 1024,
            max_stderr=64 * 1024,
        )
        if done.returncode != 0:
            log.info("uv could not fetch %s: %s", deps, done.stderr[-500:])
        return done.returncode == 0
