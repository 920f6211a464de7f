"""Agent tool calls as work items (`heym.work.<run>.tool_sandbox.<item>`), recorded once.

A `tool.dispatched` item runs here and its result is appended to the calling agent's
aggregate as an `agent.tool_result` (message id `tool-<run>-<invocation>-<tool_call_id>`), which
drives the agent's next step. A redelivered item whose result is already recorded is not run
again (at-least-once execution, exactly-once recording). A `tool.cancelled` item stops the
call if it runs here.

The tool sandbox holds no database URL and no secret key (it needs neither): everything a call
needs travels in its work item or is asked of the service that owns it.

Today canvas `http` nodes run here; python, skill and MCP calls are answered with a clear
error until their executors land (the tool-sandbox issue).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Any

import httpx
from nats.aio.msg import Msg

from contracts import subjects
from contracts.agents import ToolCallRecorded, ToolStatus
from contracts.base import Envelope
from contracts.tools import SandboxToolCancelled, SandboxToolDispatched, tool_result_message_id
from libs.eventlog import EventLog, PayloadTooLarge
from libs.expressions import ExpressionError, build_context
from services.tool_sandbox.http_node import HttpNodeError, execute_http

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class ToolWork:
    def __init__(self, event_log: EventLog, client: httpx.AsyncClient) -> None:
        self._log = event_log
        self._client = client
        self._running: dict[str, asyncio.Task[tuple[Any, ToolStatus, dict[str, Any]]]] = {}

    async def handle(self, envelopes: list[Envelope], msg: Msg) -> None:
        for env in envelopes:
            ev = env.event
            if isinstance(ev, SandboxToolCancelled):
                task = self._running.get(env.subject)
                if task is not None:
                    task.cancel()
            elif isinstance(ev, SandboxToolDispatched):
                await self.run(env, ev, redelivered=msg.metadata.num_delivered > 1)

    async def run(self, env: Envelope, ev: SandboxToolDispatched, *, redelivered: bool) -> None:
        agent_subject = subjects.agent(env.run_id, ev.invocation_id)
        if redelivered and await self._recorded(agent_subject, ev.tool_call_id):
            return  # recorded before the redelivery: never run a side effect twice
        started = _now_ms()
        clock = time.perf_counter()
        task = asyncio.create_task(self._execute(env, ev))
        self._running[env.subject] = task
        try:
            result, status, extra = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            result, status, extra = {"error": "cancelled"}, "cancelled", {}
        finally:
            self._running.pop(env.subject, None)
        record = ToolCallRecorded(
            turn=ev.turn,
            tool_call_id=ev.tool_call_id,
            name=ev.name,
            source=ev.source,
            arguments=ev.arguments,
            result=result,
            status=status,
            started_at_ms=started,
            finished_at_ms=_now_ms(),
            elapsed_ms=round((time.perf_counter() - clock) * 1000, 3),
            extra=extra,
            node_id=ev.node_id,
            node_label=ev.node_label,
        )
        await self._record(env, ev, agent_subject, record)

    async def give_up(self, envelopes: list[Envelope], why: str) -> None:
        """Record an error result for tool calls whose message exhausted its deliveries."""
        for env in envelopes:
            ev = env.event
            if not isinstance(ev, SandboxToolDispatched):
                continue
            now = _now_ms()
            record = ToolCallRecorded(
                turn=ev.turn,
                tool_call_id=ev.tool_call_id,
                name=ev.name,
                source=ev.source,
                arguments=ev.arguments,
                result={"error": f"the tool sandbox could not run {ev.name!r}: {why}"},
                status="error",
                started_at_ms=now,
                finished_at_ms=now,
                elapsed_ms=0.0,
                node_id=ev.node_id,
                node_label=ev.node_label,
            )
            await self._record(env, ev, subjects.agent(env.run_id, ev.invocation_id), record)

    async def _record(
        self, env: Envelope, ev: SandboxToolDispatched, subject: str, record: ToolCallRecorded
    ) -> None:
        message_id = tool_result_message_id(env.run_id, ev.invocation_id, ev.tool_call_id)
        try:
            await self._log.append(
                subject,
                [record],
                message_id=message_id,
                causation_id=env.event_id,
                correlation_id=env.correlation_id or env.run_id,
                traceparent=env.traceparent,
            )
        except PayloadTooLarge as exc:
            # A result the log cannot hold is an error the model sees, never a lost call.
            too_big = ToolCallRecorded(
                **{
                    **{f: getattr(record, f) for f in record.__struct_fields__},
                    "result": {"error": f"the tool's result is too large to record ({exc})"},
                    "status": "error",
                }
            )
            await self._log.append(subject, [too_big], message_id=message_id)

    async def _recorded(self, subject: str, tool_call_id: str) -> bool:
        for found in await self._log.read(subject):
            ev = found.event
            if isinstance(ev, ToolCallRecorded) and ev.tool_call_id == tool_call_id:
                return True
        return False

    async def _execute(
        self, env: Envelope, ev: SandboxToolDispatched
    ) -> tuple[Any, ToolStatus, dict[str, Any]]:
        extra: dict[str, Any] = {k: ev.meta[k] for k in ("node_id", "node_type") if k in ev.meta}
        if ev.source != "node_tool":
            return (
                {
                    "error": f"{ev.source} tools are not available in this tool sandbox yet "
                    f"(tool {ev.name!r} was not run)"
                },
                "error",
                extra,
            )
        node = ev.meta.get("node") or {}
        if node.get("type") != "http":
            return {"error": f"a {node.get('type')!r} node cannot run here"}, "error", extra
        ctx = build_context(
            ev.meta.get("inputs") or {},
            ev.meta.get("upstream") or {},
            vars=ev.meta.get("vars") or {},
            global_vars=ev.meta.get("globals") or {},
            now=datetime.fromtimestamp(ev.dispatched_at_ms / 1000, UTC),
            timezone=ev.timezone or "UTC",
        )
        raw = node.get("data")
        data: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
        try:
            async with asyncio.timeout(ev.timeout_s):
                output = await execute_http(
                    data,
                    ctx,
                    client=self._client,
                    idempotency_key=ev.idempotency_key,
                    traceparent=env.traceparent,
                )
        except TimeoutError:
            return (
                {"error": f"tool {ev.name!r} timed out after {ev.timeout_s:.0f}s"},
                "timeout",
                extra,
            )
        except (HttpNodeError, ExpressionError, ValueError) as exc:
            return {"error": str(exc)}, "error", extra
        except Exception as exc:  # a bug here must fail the call, not the service
            log.exception("tool %s crashed", ev.name)
            return {"error": f"{type(exc).__name__}: {exc}"}, "error", extra
        return output, "success", extra
