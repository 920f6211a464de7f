"""`python -m services.tool_sandbox.mcp.conformance URL`: the sandbox's own MCP client, driven
by the official MCP conformance suite's client scenarios (it passes the URL).

Connects over streamable HTTP with the same `McpClient` (warm sessions, §6.3 results) the
sandbox uses for agents, lists the tools and calls each with arguments made from its schema.
Exits non-zero when listing fails.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from libs.tools.mcp_config import McpServer
from services.tool_sandbox.containment.policy import Limits, plan
from services.tool_sandbox.mcp.client import McpClient


def sample(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for every required property (a number, a string, ...), as a model would."""
    values = {"number": 1, "integer": 1, "boolean": True, "array": [], "object": {}}
    props = schema.get("properties") or {}
    args: dict[str, Any] = {}
    for name in schema.get("required") or list(props):
        prop = props.get(name) or {}
        args[name] = prop.get("default", values.get(str(prop.get("type")), "test"))
    return args


async def _no_stored(owner: str, cid: str) -> McpServer | None:
    return None


async def drive(url: str) -> int:
    with tempfile.TemporaryDirectory(prefix="heym-mcp-conformance-") as d:
        root = Path(d)
        containment = plan(
            bubblewrap="off", data_dir=root, uid_base=61000, uv_cache=root, uv_bin=None
        )
        client = McpClient(
            containment,
            work_root=root,
            load_stored=_no_stored,
            limits=Limits(memory_kind="data"),
            first_slot=0,
        )
        server = {"id": "conformance", "transport": "streamable_http", "url": url}
        try:
            listing = await client.list_tools("conformance", [server], 30)
            if listing.errors:
                print(json.dumps({"errors": listing.errors}), flush=True)
                return 1
            for tool in listing.tools:
                args = sample(tool.get("parameters") or {})
                out = await client.call("conformance", server, tool["name"], args, 30)
                print(json.dumps({"tool": tool["name"], "status": out.status}), flush=True)
        finally:
            await client.close()
    return 0


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    if len(sys.argv) < 2:
        print("usage: python -m services.tool_sandbox.mcp.conformance URL", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(asyncio.run(drive(sys.argv[-1])))


if __name__ == "__main__":
    main()
