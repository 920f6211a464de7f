"""Python tools (Heym §6.2): a fresh contained process per call runs the restricted runner.

The tool's name is the function its code must define; it is called with the model's
arguments. `{success: true, result}` becomes the result; `{success: false, error}` and
invalid output become an error the model sees; a process past its timeout is killed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.tool_sandbox.outcome import Outcome
from services.tool_sandbox.processes import ProcessRunner
from services.tool_sandbox.skills import failure_message
from services.tool_sandbox.workspace import workspace

RUNNER = str(Path(__file__).with_name("containment") / "pytool_runner.py")


class PythonToolRunner:
    def __init__(self, processes: ProcessRunner, *, work_root: Path) -> None:
        self.processes = processes
        self.work_root = work_root

    async def run(
        self, name: str, code: str, arguments: dict[str, Any], *, timeout_s: float, slot: int
    ) -> Outcome:
        if not code.strip():
            return Outcome.error(f"Python tool {name!r} has no code")
        request = json.dumps({"code": code, "function_name": name, "arguments": arguments})
        ident = self.processes.containment.identity(slot)
        with workspace(self.work_root, [], ident) as ws:
            launch = self.processes.python_launch(
                ws, mode="run", script=RUNNER, slot=slot, timeout_s=timeout_s, site=False
            )
            done = await self.processes.run(
                launch, ws, stdin=request.encode("utf-8", errors="replace"), timeout_s=timeout_s
            )
        memory_mb = self.processes.limits.memory_bytes // (1024 * 1024)
        problem = failure_message(done, what="Tool", timeout_s=timeout_s, memory_mb=memory_mb)
        if problem is not None:
            return Outcome.error(problem, status="timeout" if done.timed_out else "error")
        try:
            reply = json.loads(done.stdout.decode("utf-8", errors="replace"))
        except ValueError:
            reply = None
        if not isinstance(reply, dict) or "success" not in reply:
            err = done.stderr.decode("utf-8", errors="replace").strip()[-500:]
            return Outcome.error(f"Tool output invalid{': ' + err if err else ''}")
        if not reply.get("success"):
            return Outcome.error(f"Tool error: {reply.get('error')}")
        return Outcome(result=reply.get("result"))
