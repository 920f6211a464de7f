"""The `http` node executor against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import socket
from typing import Any

import httpx
import pytest

from libs.config import load_settings
from libs.expressions import ExpressionContext, build_context
from services.tool_sandbox.http_node import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT_S,
    HttpNodeError,
    execute_http,
)
from tests.unit.http_node.conftest import PNG, LocalServer

pytestmark = pytest.mark.integration

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def run(
    curl: str, ctx: ExpressionContext, client: httpx.AsyncClient, **kwargs: Any
) -> dict[str, Any]:
    kwargs.setdefault("idempotency_key", "run-1:node-1")
    return await execute_http({"curl": curl}, ctx, client=client, **kwargs)


async def test_method_headers_and_body_reach_the_server(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(
        f"""curl -X PUT {server.url}/echo -H 'X-Custom: yes' -H 'Content-Type: application/json' \\
        -d '{{"a": [1, 2]}}'""",
        ctx,
        client,
    )
    [seen] = server.seen
    assert (seen.method, seen.target, seen.body) == ("PUT", "/echo", b'{"a": [1, 2]}')
    assert seen.header("x-custom") == "yes"
    assert seen.header("content-type") == "application/json"
    assert out["status"] == 200
    assert out["body"] == {"ok": True}
    assert out["request"]["method"] == "PUT"
    assert out["request"]["url"] == f"{server.url}/echo"


async def test_url_headers_and_body_are_templated(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(
        f"""curl "{server.url}/echo?id=$Input.id" -H "X-Text: $Input.text" """
        """-d '{"id": $Input.id, "text": "$input.text"}'""",
        ctx,
        client,
    )
    [seen] = server.seen
    assert seen.target == "/echo?id=7"
    assert seen.header("X-Text") == "hi"
    assert json.loads(seen.body) == {"id": 7, "text": "hi"}
    assert out["request"]["url"] == f"{server.url}/echo?id=7"
    assert out["request"]["headers"]["X-Text"] == "hi"


async def test_values_are_never_evaluated_a_second_time(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    # Issue #7 item 5: input text `$Input.id` is data; Heym rendered the body again and sent 7.
    await run(f"curl {server.url}/echo -d 'v=$Input.tpl'", ctx, client)
    assert server.seen[0].body == b"v=%24Input.id"


async def test_a_value_in_the_url_cannot_change_method_or_headers(
    server: LocalServer, client: httpx.AsyncClient
) -> None:
    attack = "x -H X-Injected:yes -X DELETE"
    ctx = build_context({"userInput": {"text": attack}}, {})
    out = await run(f"curl {server.url}/echo?q=$userInput.text", ctx, client)
    [seen] = server.seen
    assert seen.method == "GET"
    assert seen.header("X-Injected") is None
    assert seen.target == "/echo?q=x%20-H%20X-Injected%3Ayes%20-X%20DELETE"
    assert out["request"]["method"] == "GET"


async def test_a_quote_cannot_break_out_of_a_json_body(
    server: LocalServer, client: httpx.AsyncClient
) -> None:
    attack = 'a", "admin": true, "x": "'
    ctx = build_context({"userInput": {"text": attack, "n": 3}}, {})
    await run(
        f"""curl {server.url}/echo -H 'Content-Type: application/json' """
        """-d '{"q": "$userInput.text", "n": $userInput.n}'""",
        ctx,
        client,
    )
    assert json.loads(server.seen[0].body) == {"q": attack, "n": 3}


async def test_a_value_cannot_add_a_header_line(
    server: LocalServer, client: httpx.AsyncClient
) -> None:
    ctx = build_context({"userInput": {"text": "v\r\nX-Injected: yes"}}, {})
    await run(f"curl {server.url}/echo -H 'X-Text: $userInput.text'", ctx, client)
    [seen] = server.seen
    assert seen.header("X-Injected") is None
    assert seen.header("X-Text") == "v  X-Injected: yes"


async def test_data_without_method_is_a_post(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/echo -d x=1", ctx, client)
    [seen] = server.seen
    assert (seen.method, seen.body) == ("POST", b"x=1")
    assert seen.header("content-type") == "application/x-www-form-urlencoded"
    assert out["request"]["method"] == "POST"


async def test_get_flag_sends_data_in_the_query(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    await run(f"curl -G {server.url}/echo -d id=$Input.id --data-urlencode 'q=a b'", ctx, client)
    [seen] = server.seen
    assert (seen.method, seen.target, seen.body) == ("GET", "/echo?id=7&q=a%20b", b"")


async def test_idempotency_key_and_traceparent_are_sent(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/echo", ctx, client, traceparent=TRACEPARENT)
    [seen] = server.seen
    assert seen.header("Idempotency-Key") == "run-1:node-1"
    assert seen.header("traceparent") == TRACEPARENT
    assert out["request"]["headers"]["traceparent"] == TRACEPARENT


async def test_no_traceparent_when_none_is_given(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    await run(f"curl {server.url}/echo", ctx, client)
    assert server.seen[0].header("traceparent") is None


async def test_idempotency_key_from_the_curl_line_is_kept(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    await run(f"curl {server.url}/echo -H 'idempotency-key: mine'", ctx, client)
    [seen] = server.seen
    assert [v for k, v in seen.headers if k.lower() == "idempotency-key"] == ["mine"]


async def test_json_response_is_parsed_and_headers_are_lower_case(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/echo", ctx, client)
    assert out["body"] == {"ok": True}
    assert out["headers"]["content-type"] == "application/json"
    assert out["headers"]["set-cookie"] == "a=1, b=2"
    assert all(key == key.lower() for key in out["headers"])
    assert set(out) == {"status", "headers", "body", "request"}


async def test_text_response_is_text(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/text", ctx, client)
    assert out["body"] == "héllo there"


async def test_json_is_parsed_whatever_the_content_type(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/json-as-text", ctx, client)
    assert out["body"] == {"n": 1}


async def test_binary_response_is_base64(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/binary", ctx, client)
    assert out["body_encoding"] == "base64"
    assert base64.b64decode(out["body"]) == PNG


@pytest.mark.parametrize("status", [404, 500])
async def test_error_statuses_are_returned_not_raised(
    status: int, server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/status/{status}", ctx, client)
    assert out["status"] == status
    assert out["body"] == {"error": f"status {status}"}


async def test_redirect_is_not_followed_without_location_flag(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/redirect", ctx, client)
    assert (out["status"], out["body"], out["headers"]["location"]) == (302, "moved", "/landed")
    assert [s.target for s in server.seen] == ["/redirect"]


async def test_redirect_is_followed_with_location_flag(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl -L {server.url}/redirect", ctx, client)
    assert (out["status"], out["body"]) == (200, {"ok": True})
    assert [s.target for s in server.seen] == ["/redirect", "/landed"]


async def test_max_time_raises_a_clear_timeout(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    url = f"{server.url}/slow"
    with pytest.raises(HttpNodeError, match=rf"^HTTP request to {url} timed out after 0.3s$"):
        await run(f"curl -m 0.3 {url}", ctx, client)


async def test_default_timeout_applies_without_max_time(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    with pytest.raises(HttpNodeError, match=r"timed out after 0.2s$"):
        await run(f"curl {server.url}/slow", ctx, client, default_timeout_s=0.2)


async def test_connection_refused_raises(ctx: ExpressionContext, client: httpx.AsyncClient) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(HttpNodeError, match=rf"^could not connect to 127\.0\.0\.1:{port}: "):
        await run(f"curl http://127.0.0.1:{port}/", ctx, client)


async def test_invalid_curl_raises(ctx: ExpressionContext, client: httpx.AsyncClient) -> None:
    with pytest.raises(HttpNodeError, match=r"^invalid cURL command: unbalanced quotes"):
        await run("curl -d 'x http://127.0.0.1:9/", ctx, client)
    with pytest.raises(HttpNodeError, match=r"^invalid cURL command: only http"):
        await run("curl ftp://127.0.0.1/", ctx, client)
    with pytest.raises(HttpNodeError, match=r"^invalid cURL command: the node has no"):
        await execute_http({}, ctx, client=client, idempotency_key="k")


async def test_credential_headers_are_masked_in_the_output(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(
        f"curl {server.url}/echo -H 'Authorization: Bearer sk-live-123456' -b 'sid=abcdef123' "
        "-H 'X-Api-Key: key-0123456789' -H 'Proxy-Authorization: Basic Zm9vOmJhcg==' "
        "-H 'X-Public: visible-value'",
        ctx,
        client,
    )
    [seen] = server.seen
    assert seen.header("Authorization") == "Bearer sk-live-123456"
    assert seen.header("Cookie") == "sid=abcdef123"
    assert out["request"]["headers"] == {
        "Authorization": "Bearer **",
        "X-Api-Key": "key-012**",
        "Proxy-Authorization": "Basic Z**",
        "X-Public": "visible-value",
        "Cookie": "sid=abc**",
        "Idempotency-Key": "run-1:node-1",
    }


async def test_short_credential_is_hidden_entirely(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl {server.url}/echo -H 'X-Api-Key: abc'", ctx, client)
    assert out["request"]["headers"]["X-Api-Key"] == "**"


def test_default_timeout_and_size_are_far_below_heyms_and_configurable() -> None:
    # Issue #7 item 9: Heym waited 300 s for an http node without -m.
    defaults = load_settings({})
    assert defaults.http_timeout_s == DEFAULT_TIMEOUT_S == 30.0
    assert defaults.http_max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 5 * 1024 * 1024
    assert execute_http.__kwdefaults__ is not None
    assert execute_http.__kwdefaults__["default_timeout_s"] == DEFAULT_TIMEOUT_S
    chosen = load_settings({"HEYM_HTTP_TIMEOUT_S": "5", "HEYM_HTTP_MAX_RESPONSE_BYTES": "4096"})
    assert (chosen.http_timeout_s, chosen.http_max_response_bytes) == (5.0, 4096)


async def test_oversized_response_is_a_clear_node_error(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    with pytest.raises(HttpNodeError, match="larger than 1000 bytes"):
        await run(f"curl '{server.url}/big?n=5000'", ctx, client, max_response_bytes=1000)


async def test_an_endless_response_is_not_buffered_past_the_limit(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    # No Content-Length: the body is read until the limit, then the connection is dropped.
    limit = 1024 * 1024
    with pytest.raises(HttpNodeError, match=f"larger than {limit} bytes"):
        await run(f"curl {server.url}/endless", ctx, client, max_response_bytes=limit)
    assert server.endless_sent < 64 * limit  # socket buffers hold some; the 256 MiB were not sent


async def test_response_at_the_limit_is_not_truncated(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl '{server.url}/big?n=1000'", ctx, client, max_response_bytes=1000)
    assert "truncated" not in out
    assert out["body"] == "x" * 1000


async def test_non_ascii_header_values_are_sent_as_utf8(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    await run(f"curl {server.url}/echo -H 'X-Name: José'", ctx, client)
    assert server.seen[0].header("X-Name") == "José"


async def test_parser_notes_are_shown_with_the_request(
    server: LocalServer, ctx: ExpressionContext, client: httpx.AsyncClient
) -> None:
    out = await run(f"curl -k {server.url}/echo", ctx, client)
    assert "still verified" in out["request"]["notes"][0]
