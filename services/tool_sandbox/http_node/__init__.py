"""The `http` workflow node: a cURL-line parser and an httpx executor (spec §1.4)."""

from services.tool_sandbox.http_node.curl import CurlError, CurlRequest, parse_curl
from services.tool_sandbox.http_node.execute import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT_S,
    HttpNodeError,
    execute_http,
)
from services.tool_sandbox.http_node.template import fill_curl

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TIMEOUT_S",
    "CurlError",
    "CurlRequest",
    "HttpNodeError",
    "execute_http",
    "fill_curl",
    "parse_curl",
]
