"""HTTP for calls to remote A2A agents: a response-size budget and an origin-bound key.

Every byte a remote agent sends (card, JSON-RPC answers, SSE streams) counts against one
budget per call, so an agent cannot make the sandbox hold an unbounded answer. The stored
key is attached only to requests for the configured agent's origin: an Agent Card naming
another host for its interface never receives it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator

import httpx


class ResponseTooLarge(Exception):
    """The remote agent sent more than the call's response budget."""


class _Budget:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, n: int) -> None:
        self.used += n
        if self.used > self.max_bytes:
            raise ResponseTooLarge(
                f"the remote agent sent more than {self.max_bytes} bytes in this call"
            )


class _BoundedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, budget: _Budget) -> None:
        self._inner = inner
        self._budget = budget

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._budget.take(len(chunk))
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
    """Wraps the sandbox's shared transport for one call; closing it leaves the pool open."""

    def __init__(self, inner: httpx.AsyncBaseTransport, max_bytes: int) -> None:
        self._inner = inner
        self._budget = _Budget(max_bytes)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_BoundedStream(stream, self._budget),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        return None  # the shared pool belongs to the sandbox runtime


class OriginKey(httpx.Auth):
    """`X-MCP-Key: <key>` or `Authorization: Bearer <key>`, only for the agent's own origin."""

    def __init__(self, origin: str, header: str, secret: str) -> None:
        self._origin = _origin(httpx.URL(origin))
        self._header = header
        self._value = f"Bearer {secret}" if header.lower() == "authorization" else secret

    def __repr__(self) -> str:
        return f"OriginKey(origin={self._origin!r}, header={self._header!r}, value=<hidden>)"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if _origin(request.url) == self._origin:
            request.headers[self._header] = self._value
        yield request


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host.lower(), url.port or _DEFAULT_PORTS.get(url.scheme)
