"""`ToolRunner`: the Orchestrator Tool Executor of the seed, routing each call by `_source`.

`sub_agent`, `sub_workflow` and `node_tool` are handled here; `hitl` answers that human review
is not enabled yet; everything else (python, skill, mcp) goes to the tool sandbox.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from nats.aio.client import Client as NATS

from contracts.agents import ToolCallRecorded
from libs.eventlog import EventLog
from services.agent_runtime.call import AgentCall
from services.agent_runtime.tools.catalog import build_tools
from services.agent_runtime.tools.delegation import call_sub_agent, call_sub_workflow
from services.agent_runtime.tools.node_tool import run_node_tool
from services.agent_runtime.tools.sandbox import run_sandbox_tool
from services.agent_runtime.tools.spec import ToolOutcome, ToolSpec

LOCAL_TIMEOUT_S = 900.0


def _now_ms() -> int:
    return int(time.time() * 1000)


class ToolRunner:
    def __init__(self, event_log: EventLog, nc: NATS) -> None:
        self._log = event_log
        self._nc = nc

    def catalog(self, call: AgentCall) -> list[ToolSpec]:
        return build_tools(call)

    async def run(
        self, call: AgentCall, turn: int, tool_call: dict[str, Any], specs: dict[str, ToolSpec]
    ) -> ToolCallRecorded:
        call_id = str(tool_call.get("id") or "")
        function = tool_call.get("function") or {}
        name = str(function.get("name", ""))
        raw = function.get("arguments")
        raw_args = raw if isinstance(raw, str) else json.dumps(raw or {})
        spec = specs.get(name)
        started = _now_ms()
        clock = time.perf_counter()
        outcome = await self._outcome(call, call_id, name, raw_args, spec)
        return ToolCallRecorded(
            turn=turn,
            node_id=call.node_id,
            node_label=call.node_label,
            tool_call_id=call_id,
            name=name,
            source=spec.source if spec else "unknown",
            arguments=raw_args,
            result=outcome.result,
            status=outcome.status,
            started_at_ms=started,
            finished_at_ms=_now_ms(),
            elapsed_ms=round((time.perf_counter() - clock) * 1000, 3),
            extra=outcome.extra,
        )

    async def _outcome(
        self, call: AgentCall, call_id: str, name: str, raw_args: str, spec: ToolSpec | None
    ) -> ToolOutcome:
        if spec is None:
            return ToolOutcome.error(f"Unknown tool: {name}")
        try:
            args = json.loads(raw_args) if raw_args.strip() else {}
        except ValueError as exc:
            return ToolOutcome.error(f"Invalid JSON arguments for {name}: {exc}")
        if not isinstance(args, dict):
            return ToolOutcome.error(f"Arguments for {name} must be a JSON object")
        timeout = float(call.data.get("toolTimeoutSeconds") or 30)
        try:
            if spec.source == "sub_agent":
                return await call_sub_agent(self._log, call, call_id, args)
            if spec.source == "sub_workflow":
                return await call_sub_workflow(self._log, call, call_id, args)
            if spec.source == "node_tool":
                return await asyncio.wait_for(
                    run_node_tool(self._log, call, call_id, spec.meta["node"], args, timeout),
                    timeout + 5,
                )
            if spec.source == "hitl":
                return ToolOutcome.error("human review is not enabled in this deployment yet")
            return await run_sandbox_tool(
                self._nc,
                spec,
                args,
                timeout=timeout,
                run_id=call.run_id,
                invocation_id=call.invocation_id,
                tool_call_id=call_id,
            )
        except TimeoutError:
            return ToolOutcome.error(
                f"tool {name!r} timed out after {timeout:.0f}s", status="timeout"
            )
        except Exception as exc:  # a tool's failure is a result the model sees, never a crash
            return ToolOutcome.error(f"{type(exc).__name__}: {exc}")
