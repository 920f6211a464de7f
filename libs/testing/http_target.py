"""A real HTTP server for tests and benchmarks of HTTP nodes: counts, delays, failures.

Paths: `/echo` (the request back as JSON), `/delay/<ms>`, `/count/<name>` (how many times it
was called), `/hang-first/<name>` (the first call never answers, later ones do),
`/gate/<name>` (answers once the test calls `open_gate(name)`), `/idem/<name>` (an idempotent
side effect, as payment APIs do it: a request with an `Idempotency-Key` it has seen gets the
first answer again; `side_effects[name]` counts the distinct keys, so a node executed again
after a crash counts once and a real duplicate counts twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit


class HttpTarget:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.side_effects: dict[str, dict[str, int]] = {}
        self.requests: list[dict[str, Any]] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.url = ""
        self._gates: dict[str, asyncio.Event] = {}

    def open_gate(self, name: str) -> None:
        self._gates.setdefault(name, asyncio.Event()).set()

    async def start(self) -> HttpTarget:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        # Closing the connections ends idle handlers normally (a cancelled handler task makes
        # asyncio log an error); handlers still sleeping in a slow answer are cancelled.
        for writer in list(self._writers):
            writer.close()
        await asyncio.sleep(0)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def __aenter__(self) -> HttpTarget:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                request = await self._read(reader)
                if request is None:
                    break
                request["started"] = time.monotonic()
                self.requests.append(request)
                status, body = await self._answer(request)
                request["finished"] = time.monotonic()
                payload = json.dumps(body).encode()
                head = (
                    f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(payload)}\r\n\r\n"
                )
                writer.write(head.encode() + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            return  # the server is closing; end quietly (see close)
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._tasks.discard(task)

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> dict[str, Any] | None:
        line = await reader.readline()
        if not line:
            return None
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = raw.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        body = await reader.readexactly(length) if length else b""
        return {
            "method": method,
            "path": target,
            "headers": headers,
            "body": body.decode(errors="replace"),
        }

    async def _answer(self, request: dict[str, Any]) -> tuple[int, Any]:
        path = urlsplit(request["path"]).path
        parts = [p for p in path.split("/") if p]
        name = parts[1] if len(parts) > 1 else ""
        self.counts[path] += 1
        if parts[:1] == ["delay"]:
            await asyncio.sleep(int(name) / 1000)
            return 200, {"delayed_ms": int(name)}
        if parts[:1] == ["idem"]:
            key = request["headers"].get("idempotency-key", "")
            seen = self.side_effects.setdefault(name, {})
            seen.setdefault(key, len(seen) + 1)
            return 200, {"name": name, "count": seen[key]}
        if parts[:1] == ["count"]:
            return 200, {"name": name, "count": self.counts[path]}
        if parts[:1] == ["hang-first"] and self.counts[path] == 1:
            await asyncio.sleep(3600)
        if parts[:1] == ["gate"]:
            await self._gates.setdefault(name, asyncio.Event()).wait()
            return 200, {"gate": name}
        if parts[:1] == ["big"]:
            return 200, {"data": "x" * int(name)}
        if parts[:1] == ["status"]:
            return int(name), {"status": int(name)}
        return 200, {
            "method": request["method"],
            "path": path,
            "body": request["body"],
            "headers": request["headers"],
        }
