"""Property: no input value changes the HTTP node's method, URL host or set of headers.

A cURL template is generated (method, literal host, path and query with `$` spans, headers
with spans in their values, a JSON, form or text body with spans), then filled once with
benign values and once with hostile ones (shell syntax, `-H`/`-X` options, quotes, CR/LF,
`$` references, URL delimiters). The structure must be the same both times; JSON bodies must
still be JSON and carry the values exactly.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.tool_sandbox.http_node import CurlError, fill_curl
from tests.fuzz.conftest import examples

pytestmark = pytest.mark.unit

HOSTILE = st.one_of(
    st.sampled_from(
        [
            "x -H X-Injected:yes -X DELETE",
            "' -H 'X-Injected: yes",
            '" -X DELETE "',
            "a\r\nX-Injected: yes",
            "$secret.value",
            "https://evil.test/",
            "@evil.test",
            "?admin=1#frag",
            "../../admin",
            '", "admin": true, "x": "',
            "} , {",
            "\\",
            "%00",
            "; rm -rf /",
            "`id`",
            "$(id)",
            "-d @/etc/passwd",
        ]
    ),
    st.text(max_size=40),
)
SPANS = ["$in.a", "$in.b", "$in.c"]
METHOD = st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"])
HEADER_NAMES = st.sampled_from(["X-One", "X-Two", "Authorization", "Accept"])


@st.composite
def templates(draw: st.DrawFn) -> tuple[str, str, set[str]]:
    method = draw(METHOD)
    path = draw(st.sampled_from(["/items", "/items/$in.a", "/$in.a/$in.b", "/x"]))
    query = draw(st.sampled_from(["", "?q=$in.a", "?q=$in.a&r=$in.b", "?id=7"]))
    url = f"https://api.example.com{path}{query}"
    names = draw(st.lists(HEADER_NAMES, unique=True, max_size=3))
    headers = [f"-H '{name}: v {draw(st.sampled_from(SPANS))}'" for name in names]
    body_kind = draw(st.sampled_from(["none", "json", "form", "text", "json-flag"]))
    body = ""
    if body_kind == "json":
        headers.append("-H 'Content-Type: application/json'")
        body = """-d '{"q": "$in.a", "n": $in.b, "l": ["$in.c"]}'"""
    elif body_kind == "json-flag":
        body = """--json '{"q": "$in.a"}'"""
    elif body_kind == "form":
        body = "-d 'a=$in.a&b=$in.b'"
    elif body_kind == "text":
        headers.append("-H 'Content-Type: text/plain'")
        body = "--data-raw 'said: $in.c'"
    line = f"curl -X {method} '{url}' {' '.join(headers)} {body}"
    sent = {n.lower() for n in names} | (
        {"content-type"} if body_kind in ("json", "text") else set()
    )
    return line, method, sent


def fill(template: str, values: dict[str, Any]) -> Any:
    return fill_curl(template, lambda span: values.get(span.removeprefix("$in.")))


@settings(max_examples=examples(2_000, 50_000))
@given(templates(), HOSTILE, HOSTILE, st.one_of(HOSTILE, st.integers(), st.none()))
def test_no_value_changes_method_host_or_headers(
    template: tuple[str, str, set[str]], a: str, b: str, c: Any
) -> None:
    line, method, names = template
    benign = fill(line, {"a": "one", "b": 2, "c": "three"})
    try:
        hostile = fill(line, {"a": a, "b": b, "c": c})
    except CurlError as exc:
        # Only the values' *content* may be refused (e.g. a non-number for -m), never quietly
        # turned into another request; the templates here have no such position.
        raise AssertionError(f"refused: {exc}") from None
    for request in (benign, hostile):
        assert request.method == method
        assert urlsplit(request.url).hostname == "api.example.com"
        assert urlsplit(request.url).path.count("/") == urlsplit(benign.url).path.count("/")
        sent = {name.lower() for name, _ in request.headers}
        assert sent - {"content-type", "accept"} == names - {"content-type", "accept"}
        assert all("\r" not in v and "\n" not in v for _, v in request.headers)
    if hostile.body is not None and "json" in line:
        decoded = json.loads(hostile.body)
        assert decoded["q"] == (a if a is not None else "$in.a")
