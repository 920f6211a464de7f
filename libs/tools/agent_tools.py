"""What the agent runtime calls at an agent's start to offer skills and MCP tools (§4.2).

- `resolve_skills`: the node's `skills`, with `{id}` references to the owner's skills library
  filled in (an unknown id is skipped and reported);
- `skills_prompt`: the skills' content, joined with `\\n\\n---\\n\\n`, to put before the system
  instruction;
- `skill_tools`: `skill_<name>` tools (one string parameter `input`) for skills with a `.py`
  file, each with the work item `meta` the sandbox needs;
- `resolve_mcp_connections`: the node's `mcpConnections` normalised (§6.3), `{id}` references
  checked against the owner's stored connections (their secrets stay in Postgres);
- `list_mcp_tools`: the tools of every connection, asked of the tool sandbox (which keeps the
  sessions warm); a server that fails is skipped with its reason, and the time is measured
  (`timing_breakdown.mcp_list_ms`);
- `mcp_call_meta`: the work item `meta` of a call to one of those tools.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import msgspec
import nats.errors
from nats.aio.client import Client as NATS

from contracts.tools import MCP_LIST_SUBJECT, McpListReply, McpListRequest
from libs.db.types import Conn
from libs.tools import connection_store, skill_store
from libs.tools.mcp_config import McpConfigError, McpServer, is_reference, normalise
from libs.tools.skill_files import tool_name

log = logging.getLogger(__name__)

SKILL_SEPARATOR = "\n\n---\n\n"


@dataclass
class Resolved:
    items: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _is_skill_reference(raw: dict[str, Any]) -> bool:
    return bool(raw.get("id")) and not raw.get("content") and not raw.get("files")


async def resolve_skills(conn: Conn | asyncpg.Pool[Any], owner_id: str, skills: Any) -> Resolved:
    """Heym-shaped skills: inline ones unchanged, `{id}` ones loaded from the owner's library."""
    out = Resolved()
    raw = [s for s in (skills if isinstance(skills, list) else []) if isinstance(s, dict)]
    wanted = [str(s["id"]) for s in raw if _is_skill_reference(s)]
    stored = await skill_store.get_skills(conn, owner_id, wanted) if wanted else {}
    for skill in raw:
        if not _is_skill_reference(skill):
            out.items.append(skill)
            continue
        row = stored.get(str(skill["id"]))
        if row is None:
            out.problems.append(f"skill {skill['id']} was not found in your skills library")
            continue
        loaded = row.as_skill()
        if skill.get("timeoutSeconds") is not None:
            loaded["timeoutSeconds"] = skill["timeoutSeconds"]
        out.items.append(loaded)
    return out


def skills_prompt(skills: list[dict[str, Any]]) -> str:
    """Non-empty skill contents joined with `---`; goes before the system instruction."""
    parts = [str(s.get("content") or "").strip() for s in skills]
    return SKILL_SEPARATOR.join(p for p in parts if p)


def with_skills(system_instruction: str, skills: list[dict[str, Any]]) -> str:
    prefix = skills_prompt(skills)
    if not prefix:
        return system_instruction
    return f"{prefix}{SKILL_SEPARATOR}{system_instruction}" if system_instruction else prefix


def skill_tools(skills: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One `skill_<name>` tool per skill with a `.py` file; `meta` goes into the work item."""
    tools = []
    for skill in skills:
        files = skill.get("files") or []
        if not any(isinstance(f, dict) and str(f.get("path", "")).endswith(".py") for f in files):
            continue
        name = str(skill.get("name") or "skill")
        tools.append(
            {
                "name": tool_name(name),
                "description": f"Run the {name} skill.",
                "parameters": {
                    "type": "object",
                    "properties": {"input": {"type": "string"}},
                    "required": ["input"],
                },
                "_source": "skill",
                "meta": {"skill": skill},
            }
        )
    return tools


async def resolve_mcp_connections(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, connections: Any
) -> Resolved:
    """Each connection in its dispatch form; a broken or unknown one is skipped, reported."""
    out = Resolved()
    raw = [c for c in (connections if isinstance(connections, list) else []) if isinstance(c, dict)]
    for item in raw:
        if is_reference(item):
            row = await connection_store.get_connection(conn, owner_id, str(item["id"]))
            if row is None:
                out.problems.append(f"MCP connection {item['id']} was not found")
                continue
            server = McpServer(
                id=row.id,
                label=str(item.get("label") or row.label),
                transport=row.transport,
                url=row.url or "",
                command=row.command or "",
                args=tuple(row.args),
                timeout_s=row.timeout_seconds,
                stored=True,
            )
            out.items.append(server.dispatch_form())
            continue
        try:
            out.items.append(normalise(item).dispatch_form())
        except McpConfigError as exc:
            name = item.get("label") or item.get("id") or "MCP server"
            out.problems.append(f"{name}: {exc}")
    return out


@dataclass
class McpListing:
    tools: list[dict[str, Any]]
    errors: dict[str, str]
    elapsed_ms: float


_decode_reply = msgspec.json.Decoder(McpListReply).decode


async def list_mcp_tools(
    nc: NATS, owner_id: str, connections: list[dict[str, Any]], *, timeout_s: float = 30.0
) -> McpListing:
    """Ask the tool sandbox for the tools of `connections` (from `resolve_mcp_connections`).

    A server that cannot be listed is skipped (logged, named in `errors`); the agent runs with
    the others. No sandbox answering skips them all.
    """
    clock = time.perf_counter()
    if not connections:
        return McpListing(tools=[], errors={}, elapsed_ms=0.0)
    request = McpListRequest(owner_id=owner_id, connections=connections, timeout_s=timeout_s)
    try:
        msg = await nc.request(
            MCP_LIST_SUBJECT, msgspec.json.encode(request), timeout=timeout_s + 5
        )
        reply = _decode_reply(msg.data)
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError, msgspec.DecodeError) as exc:
        reason = f"the tool sandbox did not list MCP tools: {type(exc).__name__}"
        names = [str(c.get("label") or c.get("id") or "MCP server") for c in connections]
        log.warning("%s (%s skipped)", reason, ", ".join(names))
        reply = McpListReply(errors={n: reason for n in names})
    for server, reason in reply.errors.items():
        log.warning("MCP server %s skipped at listing: %s", server, reason)
    elapsed = round((time.perf_counter() - clock) * 1000, 3)
    return McpListing(tools=reply.tools, errors=reply.errors, elapsed_ms=elapsed)


def mcp_call_meta(tool: dict[str, Any]) -> dict[str, Any]:
    """The work item `meta` for a call to a listed MCP tool."""
    return {"server": tool.get("_connection") or {}, "tool": tool.get("name")}


@dataclass
class PreparedTools:
    """Everything an agent's start needs from stored skills and MCP servers (§4.2)."""

    skills: list[dict[str, Any]]
    mcp_tools: list[dict[str, Any]]
    mcp_list_ms: float
    problems: list[str]


class AgentToolSource:
    """The one call the agent runtime makes at an agent's start: `prepare(owner, data)`."""

    def __init__(self, pool: asyncpg.Pool[Any], nc: NATS) -> None:
        self._pool = pool
        self._nc = nc

    async def prepare(
        self, owner_id: str, data: dict[str, Any], *, default_timeout_s: float = 30.0
    ) -> PreparedTools:
        skills = await resolve_skills(self._pool, owner_id, data.get("skills"))
        problems = list(skills.problems)
        listing = McpListing(tools=[], errors={}, elapsed_ms=0.0)
        if data.get("mcpConnections"):
            connections = await resolve_mcp_connections(
                self._pool, owner_id, data.get("mcpConnections")
            )
            problems += connections.problems
            listing = await list_mcp_tools(
                self._nc, owner_id, connections.items, timeout_s=default_timeout_s
            )
            problems += [f"MCP server {k} skipped: {v}" for k, v in listing.errors.items()]
        return PreparedTools(
            skills=skills.items,
            mcp_tools=listing.tools,
            mcp_list_ms=listing.elapsed_ms,
            problems=problems,
        )
