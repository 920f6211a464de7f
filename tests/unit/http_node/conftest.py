"""A real HTTP/1.1 server on 127.0.0.1 for the executor tests; it records every request."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from libs.expressions import ExpressionContext, build_context

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff"


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


class LocalServer:
    """Answers by path; `/slow` never answers in time, so its handlers are cancelled at close."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.endless_sent = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None
        self.url = ""

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            seen = await self._read(reader)
            if seen is not None and seen.target.startswith("/endless"):
                self.seen.append(seen)
                await self._endless(writer)
            elif seen is not None:
                self.seen.append(seen)
                with contextlib.suppress(ConnectionError):
                    writer.write(await self._answer(seen))
                    await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self._tasks.discard(task)

    async def _endless(self, writer: asyncio.StreamWriter) -> None:
        """A body without a length that goes on until the client hangs up (capped at 256 MiB)."""
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
        chunk = b"x" * 65536
        with contextlib.suppress(ConnectionError):
            while self.endless_sent < 256 * 1024 * 1024:
                writer.write(chunk)
                await writer.drain()
                self.endless_sent += len(chunk)

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> Seen | None:
        line = await reader.readline()
        if not line:
            return None
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers: list[tuple[str, str]] = []
        while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = raw.decode("utf-8").partition(":")
            headers.append((name.strip(), value.strip()))
        length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
        body = await reader.readexactly(length) if length else b""
        return Seen(method, target, headers, body)

    async def _answer(self, seen: Seen) -> bytes:
        parts = urlsplit(seen.target)
        path, query = parts.path, parse_qs(parts.query)
        status, ctype, body, extra = 200, "application/json", b'{"ok": true}', ""
        if path == "/text":
            ctype, body = "text/plain; charset=utf-8", "héllo there".encode()
        elif path == "/json-as-text":
            ctype, body = "text/plain", b'{"n": 1}'
        elif path == "/binary":
            ctype, body = "image/png", PNG
        elif path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            body = json.dumps({"error": f"status {status}"}).encode()
        elif path == "/redirect":
            status, extra = 302, "Location: /landed\r\n"
            ctype, body = "text/plain", b"moved"
        elif path == "/big":
            ctype, body = "text/plain", b"x" * int(query["n"][0])
        elif path == "/slow":
            await asyncio.sleep(30)
        head = (
            f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            f"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n{extra}Connection: close\r\n\r\n"
        )
        return head.encode() + body


@pytest.fixture
async def server() -> AsyncIterator[LocalServer]:
    srv = LocalServer()
    await srv.start()
    try:
        yield srv
    finally:
        await srv.close()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as http:
        yield http


@pytest.fixture
def ctx() -> ExpressionContext:
    inputs: dict[str, Any] = {"Input": {"id": 7, "text": "hi", "tpl": "$Input.id"}}
    return build_context(inputs, {})
