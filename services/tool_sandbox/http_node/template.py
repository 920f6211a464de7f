"""The `http` node's cURL template: parsed first, then filled with values, exactly once.

Rendering the whole command line with the workflow's values and parsing the result (Heym's
way) lets a value rewrite the request: `x -H X-Injected:yes -X DELETE` in a URL adds a
header and changes the method, a quote breaks out of `-d '{"q":"$input.text"}'`, and the
second rendering of the body evaluates `$…` text that came in as data.

Here every `$` span is replaced by an opaque alphanumeric mark, the marked line is parsed
into method, URL, headers and body, and only then is each mark replaced by its value, encoded
for where it stands:

- URL: percent-encoded (every reserved character) after the host; a span in the scheme or
  host is the author's own choice of endpoint and is inserted as is;
- header values (also -A, -e, --oauth2-bearer): one line (CR, LF and NUL become spaces);
  a span in a header *name* is refused, so no value can change which headers are sent;
- JSON bodies (`--json`, a JSON Content-Type, or a body that starts with `{` or `[`): inside
  a JSON string the value's JSON-escaped text, elsewhere the value as JSON;
- form bodies (`-d` without another Content-Type, `--data-urlencode`): percent-encoded;
- other bodies (an explicit non-JSON, non-form Content-Type): the value's text;
- the method and `-m`: the value's text, which must still be a method / a number.

A value that resolves to null is shown as its literal `$…` text, as in templates, except
as a JSON value, where it is `null`. Values are never evaluated again.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from libs.expressions import find_spans, stringify
from services.tool_sandbox.http_node.curl import CurlError, CurlRequest, _Draft, parse_draft

Resolve = Callable[[str], Any]
"""Typed value of one `$…` span (None when it does not resolve)."""

METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
_FORM = "application/x-www-form-urlencoded"
_ONE_LINE = str.maketrans({"\r": " ", "\n": " ", "\x00": " "})


class _Marks:
    """The spans of one template, each behind a mark no template text can contain."""

    def __init__(self, template: str, resolve: Resolve) -> None:
        token = secrets.token_hex(6)
        self.pattern = re.compile(f"HEYM{token}S(\\d+)E")
        self._resolve = resolve
        self.spans: list[str] = []
        self._values: dict[int, Any] = {}
        parts: list[str] = []
        last = 0
        for span in find_spans(template):
            parts.append(template[last : span.start])
            parts.append(f"HEYM{token}S{len(self.spans)}E")
            self.spans.append(span.text)
            last = span.end
        parts.append(template[last:])
        self.marked = "".join(parts)

    def value(self, index: int) -> Any:
        if index not in self._values:  # each span is evaluated once, wherever it is used
            self._values[index] = self._resolve(self.spans[index])
        return self._values[index]

    def text(self, index: int) -> str:
        value = self.value(index)
        return self.spans[index] if value is None else stringify(value)

    def fill(self, text: str, encode: Callable[[int], str]) -> str:
        return self.pattern.sub(lambda m: encode(int(m.group(1))), text)

    def has(self, text: str) -> bool:
        return self.pattern.search(text) is not None


def fill_curl(template: str, resolve: Resolve) -> CurlRequest:
    """Parse the template's structure, then fill its spans in as values (see the module)."""
    marks = _Marks(template, resolve)
    draft = parse_draft(marks.marked)
    if not marks.spans:
        return draft.finish()
    _fill_method(draft, marks)
    draft.urls = [_fill_url(url, marks) for url in draft.urls]
    _fill_headers(draft, marks)
    if draft.timeout is not None:
        draft.timeout = marks.fill(draft.timeout, marks.text)
    if draft.basic is not None:
        draft.basic = marks.fill(draft.basic, marks.text)
    draft.data = _fill_body(draft, marks)
    return draft.finish()


def _fill_method(draft: _Draft, marks: _Marks) -> None:
    if draft.method is None or not marks.has(draft.method):
        return
    method = marks.fill(draft.method, marks.text).strip().upper()
    if method not in METHODS:
        raise CurlError(f"invalid cURL command: -X must give one of {', '.join(sorted(METHODS))}")
    draft.method = method


def _fill_url(url: str, marks: _Marks) -> str:
    if not marks.has(url):
        return url
    scheme_end = url.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    authority_end = min((i for i in (url.find(c, start) for c in "/?#") if i >= 0), default=-1)
    if authority_end < 0:
        authority_end = len(url)

    def encode(match: re.Match[str]) -> str:
        index = int(match.group(1))
        if match.start() < authority_end:
            return marks.text(index)  # the author's endpoint, e.g. `$vars.apiBase/items`
        return quote(marks.text(index), safe="")

    return marks.pattern.sub(encode, url)


def _one_line(marks: _Marks) -> Callable[[int], str]:
    return lambda index: marks.text(index).translate(_ONE_LINE)


def _fill_headers(draft: _Draft, marks: _Marks) -> None:
    filled: list[tuple[str, str]] = []
    for name, value in draft.headers:
        if marks.has(name):
            raise CurlError("invalid cURL command: expressions are not allowed in header names")
        filled.append((name, marks.fill(value, _one_line(marks))))
    draft.headers = filled
    draft.implicit = {k: marks.fill(v, _one_line(marks)) for k, v in draft.implicit.items()}
    draft.cookies = [marks.fill(c, lambda i: quote(marks.text(i), safe="")) for c in draft.cookies]
    if draft.auth is not None:
        draft.auth = marks.fill(draft.auth, _one_line(marks))


def _content_type(draft: _Draft) -> str | None:
    for name, value in draft.headers:
        if name.lower() == "content-type":
            return value.lower()
    return None


def _fill_body(draft: _Draft, marks: _Marks) -> list[str]:
    if not any(marks.has(piece) for piece in draft.data):
        return draft.data
    declared = _content_type(draft)
    joined = "&".join(draft.data).lstrip()
    if (
        draft.json_body
        or (declared is not None and "json" in declared)
        or (declared is None and joined[:1] in ("{", "["))
    ):
        mode = "json"
    elif declared is None or _FORM in declared:
        mode = "form"
    else:
        mode = "text"
    filled: list[str] = []
    for kind, piece in zip(draft.data_kinds, draft.data, strict=True):
        if kind == "--data-urlencode" or mode == "form":
            filled.append(marks.fill(piece, lambda i: quote(marks.text(i), safe="")))
        elif mode == "json":
            filled.append(_fill_json(piece, marks))
        else:
            filled.append(marks.fill(piece, marks.text))
    return filled


def _fill_json(body: str, marks: _Marks) -> str:
    """Inside a JSON string the value's escaped text; elsewhere the value as JSON."""
    out: list[str] = []
    last = 0
    for match in marks.pattern.finditer(body):
        out.append(body[last : match.start()])
        index = int(match.group(1))
        if _inside_string(body, match.start()):
            out.append(json.dumps(marks.text(index), ensure_ascii=False)[1:-1])
        else:
            out.append(json.dumps(marks.value(index), ensure_ascii=False, default=stringify))
        last = match.end()
    out.append(body[last:])
    return "".join(out)


def _inside_string(text: str, position: int) -> bool:
    inside = False
    i = 0
    while i < position:
        ch = text[i]
        if inside and ch == "\\":
            i += 2
            continue
        if ch == '"':
            inside = not inside
        i += 1
    return inside
