"""MCP connection settings as Heym writes them (§6.3), normalised into one frozen shape.

`args` and `headers` may be JSON strings: invalid JSON becomes `[]` / `{}`, None becomes
empty, and the input is never mutated. A transport other than stdio, sse or
streamable_http is refused with "Unknown MCP transport".
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

import msgspec

TRANSPORTS: Final = ("stdio", "sse", "streamable_http")
MAX_ARGS = 100
MAX_ENTRY = 8192


class McpConfigError(ValueError):
    """The connection cannot be used as given."""


class McpServer(msgspec.Struct, frozen=True, kw_only=True):
    """One MCP server to connect to; `repr` hides headers and env (they hold keys)."""

    id: str = ""
    label: str = ""
    transport: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = msgspec.field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    timeout_s: float | None = None
    # A stored connection (`{id}` on the agent node): the sandbox loads it, secrets included.
    stored: bool = False

    def __repr__(self) -> str:
        where = self.url or " ".join([self.command, *self.args])
        return f"McpServer({self.transport} {where!r}, id={self.id!r}, <headers/env hidden>)"

    @property
    def name(self) -> str:
        """`_mcp_server`: the label, else the id."""
        return self.label or self.id

    @property
    def connection_id(self) -> str:
        """`_connection_id`: the id, else the label, else "default"."""
        return self.id or self.label or "default"

    def fingerprint(self) -> str:
        """Identifies the server and its credentials (warm sessions are keyed by it)."""
        body = msgspec.json.encode(
            [self.transport, self.command, self.args, self.env, self.url, self.headers]
        )
        return hashlib.sha256(body).hexdigest()

    def public(self) -> dict[str, Any]:
        """What may be recorded in the event log: no header or env values."""
        return {
            "id": self.id,
            "label": self.label,
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "url": self.url,
            "timeoutSeconds": self.timeout_s,
            "headerNames": sorted(self.headers),
            "envNames": sorted(self.env),
            "stored": self.stored,
        }

    def dispatch_form(self) -> dict[str, Any]:
        """How a tool call names its server: a stored connection by id (the sandbox loads its
        secrets), an inline one with its settings (they are in the workflow already)."""
        if self.stored:
            return self.public()
        return {
            "id": self.id,
            "label": self.label,
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env": dict(self.env),
            "url": self.url,
            "headers": dict(self.headers),
            "timeoutSeconds": self.timeout_s,
        }


def _json_value(raw: Any, kind: type) -> Any:
    if raw is None:
        return kind()
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else kind()
        except ValueError:
            return kind()
    return raw if isinstance(raw, kind) else kind()


def _text(raw: Any, what: str) -> str:
    if raw is None:
        return ""
    text = str(raw)
    if len(text) > MAX_ENTRY or "\x00" in text:
        raise McpConfigError(f"MCP {what} is too long or contains NUL")
    return text


def _mapping(raw: Any, what: str) -> dict[str, str]:
    value = _json_value(raw, dict)
    return {_text(k, what): _text(v, what) for k, v in value.items() if v is not None}


def _timeout(raw: Any) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def normalise(raw: dict[str, Any]) -> McpServer:
    """One connection from an agent node's `mcpConnections` (or a stored row's fields)."""
    transport = raw.get("transport") or "stdio"
    if transport not in TRANSPORTS:
        raise McpConfigError(f"Unknown MCP transport: {transport}")
    args = _json_value(raw.get("args"), list)
    if len(args) > MAX_ARGS:
        raise McpConfigError(f"an MCP command may have at most {MAX_ARGS} arguments")
    server = McpServer(
        id=_text(raw.get("id"), "id"),
        label=_text(raw.get("label"), "label"),
        transport=str(transport),
        command=_text(raw.get("command"), "command").strip(),
        args=tuple(_text(a, "argument") for a in args),
        env=_mapping(raw.get("env"), "env"),
        url=_text(raw.get("url"), "url").strip(),
        headers=_mapping(raw.get("headers"), "header"),
        timeout_s=_timeout(raw.get("timeoutSeconds")),
        stored=bool(raw.get("stored")),
    )
    if server.stored:
        return server
    if transport == "stdio" and not server.command:
        raise McpConfigError("an stdio MCP connection needs a command")
    if transport != "stdio" and not server.url.startswith(("http://", "https://")):
        raise McpConfigError(f"an {transport} MCP connection needs an http(s) url")
    return server


def is_reference(raw: dict[str, Any]) -> bool:
    """`{id}` alone (or with a label): a stored connection to load, not an inline one."""
    return bool(raw.get("id")) and not any(
        raw.get(k) for k in ("command", "url", "transport", "headers", "env", "args")
    )
