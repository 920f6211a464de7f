"""`ToolExecutor`: runs one dispatched agent tool call by its source and returns its outcome.

Sources: `python` (a Python tool), `skill`, `mcp`, `a2a` (a remote A2A agent), and
`node_tool` (a canvas `http` or `a2a` node run as a tool). The call's `timeout_s` is always
enforced here as well, with a short grace for the executor's own clean-up, so no call holds a
slot past it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from contracts.tools import SandboxToolDispatched
from libs.expressions import ExpressionError, build_context
from libs.secrets import Masker
from services.tool_sandbox.a2a_client import RemoteAgentError, RemoteCall
from services.tool_sandbox.a2a_client.node import call_node_agent, call_tool_agent
from services.tool_sandbox.http_node import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT_S,
    HttpNodeError,
    execute_http,
)
from services.tool_sandbox.mcp.client import McpClient
from services.tool_sandbox.outcome import Outcome
from services.tool_sandbox.python_tools import PythonToolRunner
from services.tool_sandbox.skills import SkillRunner

PROCESS_SOURCES = frozenset({"python", "skill"})
GRACE_S = 10.0
# A workflow's own timeouts (`toolTimeoutSeconds`, a skill's `timeoutSeconds`) are capped:
# one call never holds a slot (and a user's share) for longer than this.
MAX_TIMEOUT_S = 900.0

# (owner, run, tool_call_id) -> stores a workspace's output files, rewrites the result
PublisherFactory = Callable[[str, str, str], Callable[[Path, Any], Awaitable[Any]]]
# (run, work item) -> the key of the stored credential the item names (asked, never recorded)
ToolCredentials = Callable[[str, str], Awaitable[str]]


def _bounded(seconds: float) -> float:
    if seconds != seconds:  # NaN
        return 30.0
    return min(max(0.1, float(seconds)), MAX_TIMEOUT_S)


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise ValueError(f"Invalid JSON arguments: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("Arguments must be a JSON object")
    return value


class ToolExecutor:
    def __init__(
        self,
        *,
        skills: SkillRunner,
        python_tools: PythonToolRunner,
        mcp: McpClient,
        http: httpx.AsyncClient,
        publisher: PublisherFactory,
        a2a: RemoteCall,
        credentials: ToolCredentials,
        http_timeout_s: float = DEFAULT_TIMEOUT_S,
        http_max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.skills = skills
        self.python_tools = python_tools
        self.mcp = mcp
        self.http = http
        self._http_timeout_s = http_timeout_s
        self._http_max_response_bytes = http_max_response_bytes
        self.publisher = publisher
        self.a2a = a2a
        self._credentials = credentials

    async def run(
        self, run_id: str, ev: SandboxToolDispatched, slot: int, traceparent: str | None = None
    ) -> Outcome:
        try:
            args = _arguments(ev.arguments)
        except ValueError as exc:
            return Outcome.error(f"{exc} for {ev.name}")
        timeout = _bounded(ev.timeout_s or 30.0)
        try:
            async with asyncio.timeout(self._budget(ev, timeout) + GRACE_S):
                return await self._by_source(run_id, ev, args, timeout, slot, traceparent)
        except TimeoutError:
            return Outcome.error(f"tool {ev.name!r} timed out after {timeout:g}s", status="timeout")

    @staticmethod
    def _budget(ev: SandboxToolDispatched, timeout: float) -> float:
        if ev.source == "skill":
            skill = ev.meta.get("skill") or {}
            try:
                return _bounded(float(skill.get("timeoutSeconds") or timeout))
            except (TypeError, ValueError):
                return timeout
        return timeout

    async def _by_source(
        self,
        run_id: str,
        ev: SandboxToolDispatched,
        args: dict[str, Any],
        timeout: float,
        slot: int,
        traceparent: str | None,
    ) -> Outcome:
        if ev.source == "python":
            code = ev.meta.get("code")
            return await self.python_tools.run(
                ev.name, str(code or ""), args, timeout_s=timeout, slot=slot
            )
        if ev.source == "skill":
            skill = ev.meta.get("skill")
            if not isinstance(skill, dict):
                return Outcome.error(f"skill tool {ev.name!r} has no skill")
            publish = self.publisher(ev.owner_id, run_id, ev.tool_call_id)
            return await self.skills.run(
                skill,
                args,
                timeout_s=self._budget(ev, timeout),
                slot=slot,
                publish=publish,
            )
        if ev.source == "mcp":
            server = ev.meta.get("server")
            if not isinstance(server, dict):
                return Outcome.error(f"MCP tool {ev.name!r} names no server")
            tool = str(ev.meta.get("tool") or ev.name)
            return await self.mcp.call(ev.owner_id, server, tool, args, timeout, traceparent)
        if ev.source == "a2a":
            return await self._a2a(run_id, ev, args)
        if ev.source == "node_tool":
            return await self._node_tool(run_id, ev, traceparent)
        return Outcome.error(f"the tool sandbox cannot run {ev.source!r} tools")

    async def _secret(self, run_id: str, ev: SandboxToolDispatched, credential_id: str) -> str:
        return await self._credentials(run_id, ev.item_id) if credential_id.strip() else ""

    async def _a2a(self, run_id: str, ev: SandboxToolDispatched, args: dict[str, Any]) -> Outcome:
        agent = ev.meta.get("agent")
        credential = str(agent.get("credentialId") or "") if isinstance(agent, dict) else ""
        secret = ""
        try:
            secret = await self._secret(run_id, ev, credential)
            result = await call_tool_agent(self.a2a, ev.meta, args, secret)
        except RemoteAgentError as exc:
            return Outcome.error(Masker([secret]).text(str(exc)))
        return Outcome(result=Masker([secret]).value(result))

    async def _node_tool(
        self, run_id: str, ev: SandboxToolDispatched, traceparent: str | None
    ) -> Outcome:
        node = ev.meta.get("node") or {}
        ntype = str(node.get("type") or "")
        extra = {"node_id": node.get("id"), "node_type": ntype}
        if ntype not in ("http", "a2a"):
            return Outcome.error(f"the tool sandbox cannot run {ntype!r} nodes", extra=extra)
        data = node.get("data")
        ctx = build_context(
            ev.meta.get("inputs") or {},
            ev.meta.get("upstream") or {},
            vars=ev.meta.get("vars") or {},
            global_vars=ev.meta.get("globals") or {},
            now=datetime.fromtimestamp((ev.dispatched_at_ms or 0) / 1000, UTC),
            timezone=ev.timezone or "UTC",
        )
        if ntype == "a2a":
            fields = dict(data) if isinstance(data, dict) else {}
            secret = ""
            try:
                secret = await self._secret(run_id, ev, str(fields.get("credentialId") or ""))
                output = await call_node_agent(self.a2a, fields, ctx, secret)
            except (RemoteAgentError, ExpressionError) as exc:
                return Outcome.error(Masker([secret]).text(str(exc)), extra=extra)
            return Outcome(result=Masker([secret]).value(output), extra=extra)
        try:
            output = await execute_http(
                dict(data) if isinstance(data, dict) else {},
                ctx,
                client=self.http,
                idempotency_key=ev.idempotency_key,
                traceparent=traceparent,
                default_timeout_s=self._http_timeout_s,
                max_response_bytes=self._http_max_response_bytes,
            )
        except (HttpNodeError, ExpressionError, ValueError) as exc:
            return Outcome.error(str(exc), extra=extra)
        return Outcome(result=output, extra=extra)
