"""MCP client sessions from the `mcp` SDK (real clients, not hand-built JSON) against Heym."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx2
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def streamable(url: str, key: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"X-MCP-Key": key}, timeout=120) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def legacy_sse(url: str, key: str) -> AsyncIterator[ClientSession]:
    async with (
        sse_client(url, headers={"Authorization": f"Bearer {key}"}, sse_read_timeout=120) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
