"""MCP connection normalisation and result extraction (§6.3)."""

from __future__ import annotations

import pytest
from mcp_types import CallToolResult, ImageContent, TextContent, Tool

from libs.tools.mcp_config import McpConfigError, McpServer, is_reference, normalise
from services.tool_sandbox.mcp.results import convert, extract

pytestmark = pytest.mark.unit


def test_args_and_headers_may_be_json_strings_and_bad_json_is_empty() -> None:
    raw = {
        "transport": "stdio",
        "command": "srv",
        "args": '["--a", "1"]',
        "env": None,
        "headers": "{not json",
    }
    server = normalise(raw)
    assert server.args == ("--a", "1")
    assert server.headers == {}
    assert server.env == {}
    assert raw["args"] == '["--a", "1"]'  # the input is not mutated
    assert normalise({"transport": "sse", "url": "http://h/sse", "args": "oops"}).args == ()


def test_unknown_transport_and_missing_settings_are_refused() -> None:
    with pytest.raises(McpConfigError, match="Unknown MCP transport: websocket"):
        normalise({"transport": "websocket"})
    with pytest.raises(McpConfigError, match="needs a command"):
        normalise({"transport": "stdio"})
    with pytest.raises(McpConfigError, match="needs an http"):
        normalise({"transport": "streamable_http", "url": "file:///etc/passwd"})


def test_names_and_secrets() -> None:
    server = McpServer(transport="sse", url="http://h", headers={"Authorization": "Bearer s3cr3t"})
    assert server.connection_id == "default"
    assert "s3cr3t" not in repr(server)
    assert "s3cr3t" not in str(server.public())
    assert McpServer(transport="sse", label="L", id="I").name == "L"
    assert McpServer(transport="sse", id="I").name == "I"
    assert is_reference({"id": "abc"})
    assert not is_reference({"id": "abc", "transport": "stdio", "command": "x"})


def _result(**kw: object) -> CallToolResult:
    return CallToolResult.model_validate({"content": [], **kw})


def test_result_extraction_rules_in_order() -> None:
    text = TextContent(text='{"a": 1}')
    assert extract(_result(content=[TextContent(text="bad")], is_error=True)) == {"error": "bad"}
    assert extract(_result(is_error=True)) == {"error": "Unknown MCP tool error"}
    assert extract(_result()) is None
    assert extract(_result(content=[text], structured_content={"s": 2})) == {"s": 2}
    assert extract(_result(content=[text])) == {"a": 1}
    two = [TextContent(text="x"), TextContent(text="y")]
    assert extract(_result(content=two)) == "x\ny"
    image = ImageContent(data="AA==", mime_type="image/png")
    assert extract(_result(content=[image])) == ""


def test_tools_are_converted_for_the_agent() -> None:
    server = McpServer(id="c1", label="Time", transport="stdio", command="t")
    tool = Tool(name="now", input_schema={"type": "object", "properties": {}})
    converted = convert(tool, server)
    assert converted["_source"] == "mcp"
    assert converted["_mcp_server"] == "Time"
    assert converted["_connection_id"] == "c1"
    assert converted["description"] == ""
