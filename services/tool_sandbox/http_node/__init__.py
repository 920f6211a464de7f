"""The `http` workflow node: a cURL-line parser and an httpx executor (spec §1.4)."""

from services.tool_sandbox.http_node.curl import CurlError, CurlRequest, parse_curl
from services.tool_sandbox.http_node.execute import HttpNodeError, execute_http

__all__ = ["CurlError", "CurlRequest", "HttpNodeError", "execute_http", "parse_curl"]
