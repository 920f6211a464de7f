"""A loopback reverse proxy that adds an MCP key header: the conformance suite sends none.

Everything else passes through unchanged, Host and Origin included (the DNS-rebinding
scenario depends on them), and responses stream (SSE)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn

from libs.embedded.process import free_port
from libs.testing.eventually import eventually

HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade", "content-length"}


class Proxy:
    """The ASGI app and the upstream responses it is streaming (closed to stop)."""

    def __init__(self, upstream: str, key: str) -> None:
        self.app = proxy_app(upstream, key, self)
        self.open: set[httpx.Response] = set()

    async def close_streams(self) -> None:
        for response in list(self.open):
            await response.aclose()


def proxy_app(upstream: str, key: str, proxy: Proxy) -> Any:
    client = httpx.AsyncClient(base_url=upstream, timeout=httpx.Timeout(120, connect=5))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await client.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [
            (k.decode(), v.decode()) for k, v in scope["headers"] if k.decode().lower() not in HOP
        ]
        headers.append(("X-MCP-Key", key))
        path = scope["path"] + (
            f"?{scope['query_string'].decode()}" if scope["query_string"] else ""
        )
        request = client.build_request(scope["method"], path, headers=headers, content=body)
        response = await client.send(request, stream=True)
        proxy.open.add(response)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (k.encode(), v.encode())
                        for k, v in response.headers.multi_items()
                        if k.lower() not in HOP
                    ],
                }
            )
            # A long-lived stream (the MCP GET stream) ends when either side goes away.
            with contextlib.suppress(httpx.HTTPError):
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            proxy.open.discard(response)
            await response.aclose()

    return app


@contextlib.asynccontextmanager
async def key_proxy(upstream: str, key: str) -> AsyncIterator[str]:
    port = free_port()
    proxy = Proxy(upstream, key)
    config = uvicorn.Config(
        proxy.app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, timeout=10)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await proxy.close_streams()  # open streams (the MCP GET stream) end first
        server.should_exit = True
        await task
