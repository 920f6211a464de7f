"""Running one `http` node: render and parse its cURL line, send it, shape Heym's output."""

from __future__ import annotations

import asyncio
import base64
import codecs
import functools
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from libs.expressions import ExpressionContext, evaluate_single, evaluate_soon
from services.tool_sandbox.http_node.curl import CurlError, CurlRequest
from services.tool_sandbox.http_node.template import fill_curl

# Request headers whose values are credentials: shown masked in the node output.
_SECRET_HEADERS = frozenset({"authorization", "cookie", "x-api-key", "proxy-authorization"})
_BINARY_TYPES = frozenset({"image", "audio", "video", "font"})
_TEXT_SUBTYPES = frozenset({"json", "xml", "javascript", "x-www-form-urlencoded", "x-ndjson"})


class HttpNodeError(Exception):
    """The request could not be made or completed. A 4xx/5xx answer is *not* this error."""


# Defaults of HEYM_HTTP_TIMEOUT_S and HEYM_HTTP_MAX_RESPONSE_BYTES (libs/config).
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024


class _Received(msgspec.Struct, frozen=True):
    """What came back: status, headers and the decoded body bytes."""

    status: int
    headers: dict[str, str]
    charset: str | None
    content_type: str
    content: bytes


async def execute_http(
    node_data: dict[str, Any],
    ctx: ExpressionContext,
    *,
    client: httpx.AsyncClient,
    idempotency_key: str,
    traceparent: str | None = None,
    default_timeout_s: float = DEFAULT_TIMEOUT_S,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> dict[str, Any]:
    """Execute an `http` node and return ``{status, headers, body, request}``.

    The ``curl`` field is parsed first and its `$` spans filled in as values afterwards,
    each encoded for where it stands (see ``template``), exactly once: on the event loop
    within an inline slice, else from the start on the evaluation pool (``evaluate_soon``;
    a hop for every node cost more than the filling itself).
    ``Idempotency-Key`` and ``traceparent`` are added unless the cURL line
    sets them. A ``-m`` timeout bounds the whole exchange, else ``default_timeout_s``.
    A body larger than ``max_response_bytes`` (after decompression) fails the node; it is
    never read past the limit. Non-text bodies come back base64-encoded with
    ``body_encoding: "base64"``. Expression errors
    from rendering propagate unchanged; request failures raise ``HttpNodeError``.
    """
    request = await evaluate_soon(functools.partial(_parse, node_data, ctx))
    body = request.body
    headers = _outgoing_headers(request.headers, idempotency_key, traceparent)
    timeout_s = request.timeout_s if request.timeout_s is not None else default_timeout_s
    try:
        # httpx timeouts are per phase (connect, each read…); curl's -m bounds the total.
        async with asyncio.timeout(timeout_s):
            received = await _send(client, request, headers, body, timeout_s, max_response_bytes)
    except (TimeoutError, httpx.TimeoutException) as exc:
        message = f"HTTP request to {request.url} timed out after {timeout_s:g}s"
        raise HttpNodeError(message) from exc
    except httpx.ConnectError as exc:
        raise HttpNodeError(f"could not connect to {_host(request.url)}: {exc}") from exc
    except httpx.RequestError as exc:
        raise HttpNodeError(f"HTTP request to {request.url} failed: {exc}") from exc
    return _output(request, headers, received)


def _parse(node_data: dict[str, Any], ctx: ExpressionContext) -> CurlRequest:
    template = node_data.get("curl")
    if not isinstance(template, str) or not template.strip():
        raise HttpNodeError("invalid cURL command: the node has no `curl` field")
    try:
        return fill_curl(template, lambda span: evaluate_single(span, ctx))
    except CurlError as exc:
        raise HttpNodeError(str(exc)) from exc


def _outgoing_headers(
    headers: list[tuple[str, str]], idempotency_key: str, traceparent: str | None
) -> list[tuple[str, str]]:
    # A key or trace context written in the cURL line is deliberate and is kept as is.
    out = list(headers)
    present = {name.lower() for name, _ in out}
    if "idempotency-key" not in present:
        out.append(("Idempotency-Key", idempotency_key))
    if traceparent and "traceparent" not in present:
        out.append(("traceparent", traceparent))
    return out


async def _send(
    client: httpx.AsyncClient,
    request: CurlRequest,
    headers: list[tuple[str, str]],
    body: str | None,
    timeout_s: float,
    limit: int,
) -> _Received:
    try:
        # Encoded by hand: httpx would refuse non-ASCII header values, curl sends UTF-8.
        outgoing = client.build_request(
            request.method,
            request.url,
            headers=[(name.encode(), value.encode()) for name, value in headers],
            content=body.encode() if body is not None else None,
            timeout=timeout_s,
        )
    except (httpx.InvalidURL, ValueError) as exc:
        raise HttpNodeError(f"invalid request to {request.url}: {exc}") from exc
    response = await client.send(outgoing, stream=True, follow_redirects=request.follow_redirects)
    chunks: list[bytes] = []
    size = 0
    too_large = HttpNodeError(
        f"the response from {_host(request.url)} is larger than {limit} bytes "
        "(HEYM_HTTP_MAX_RESPONSE_BYTES)"
    )
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        # Counted after decompression, so a small gzip bomb cannot exceed the limit either.
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
    finally:
        await response.aclose()
    return _Received(
        status=response.status_code,
        headers=dict(response.headers.items()),
        charset=response.charset_encoding,
        content_type=response.headers.get("content-type", ""),
        content=b"".join(chunks),
    )


def _output(
    request: CurlRequest, headers: list[tuple[str, str]], received: _Received
) -> dict[str, Any]:
    shown: dict[str, str] = {}
    for name, value in headers:
        value = _mask(value) if name.lower() in _SECRET_HEADERS else value
        shown[name] = f"{shown[name]}, {value}" if name in shown else value
    sent: dict[str, Any] = {"method": request.method, "url": request.url, "headers": shown}
    if request.notes:
        sent["notes"] = list(request.notes)
    out: dict[str, Any] = {"status": received.status, "headers": received.headers}
    text = _text(received)
    if text is None:
        out["body"] = base64.b64encode(received.content).decode("ascii")
        out["body_encoding"] = "base64"
    else:
        out["body"] = _json_or_text(text)
    out["request"] = sent
    return out


def _mask(value: str) -> str:
    # Heym shows a credential as its first 7 characters and `**`; a value that short
    # would be shown whole, so it is hidden entirely.
    return value[:7] + "**" if len(value) > 7 else "**"


def _text(received: _Received) -> str | None:
    """The body as text, or None when it is binary (then it is sent base64-encoded)."""
    media = received.content_type.partition(";")[0].strip().lower()
    major, _, minor = media.partition("/")
    textual = major == "text" or minor in _TEXT_SUBTYPES or minor.endswith(("+json", "+xml"))
    if major in _BINARY_TYPES and not textual:
        return None
    # Declared text is decoded leniently; anything else must decode cleanly to count as text.
    errors = "replace" if textual else "strict"
    try:
        decoder = codecs.getincrementaldecoder(received.charset or "utf-8")(errors)
    except LookupError:
        decoder = codecs.getincrementaldecoder("utf-8")(errors)
    try:
        text = decoder.decode(received.content, final=True)
    except UnicodeDecodeError:
        return None
    return None if not textual and "\x00" in text else text


def _json_or_text(text: str) -> Any:
    if not text.strip():
        return text
    try:
        # msgspec rejects NaN/Infinity, which would not survive the JSON event log.
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return text


def _host(url: str) -> str:
    parts = urlsplit(url)
    # The host only: the URL's user-info may hold a password.
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
