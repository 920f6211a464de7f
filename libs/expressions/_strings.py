"""Methods available on string values (`$s.upper()`, `$s.substring(0, 3)`, ...)."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote, unquote

from libs.expressions._budget import active
from libs.expressions._builders import regex_replace, replace_all, split_text
from libs.expressions._runtime import MethodImpl, Runtime


def _substring(_rt: Runtime, s: str, start: int, end: int | None = None) -> str:
    return s[start:end]


def _substr(_rt: Runtime, s: str, start: int, length: int | None = None) -> str:
    if length is None:
        return s[start:]
    return s[start : start + length] if start >= 0 or start + length < 0 else s[start:]


def _char_at(_rt: Runtime, s: str, index: int) -> str:
    return s[index] if 0 <= index < len(s) else ""


def _split(_rt: Runtime, s: str, separator: str | None = None) -> list[str]:
    return split_text(s, separator)


def _unescape(_rt: Runtime, s: str) -> Any:
    # Accepts both a quoted JSON string (what escape() returns) and a bare escaped body.
    candidate = s if len(s) >= 2 and s[0] == s[-1] == '"' else f'"{s}"'
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        return s


def _simple(fn: Any) -> MethodImpl:
    """Adapt a one-argument ``fn(s)`` to the method calling convention.

    These grow their input at most a few times over (`urlEncode`, `escape`, `upper` of
    "ß"), so the result is built, then checked against the budget.
    """

    def impl(_rt: Runtime, s: str) -> Any:
        return active().sized(fn(s))

    return impl


STRING_PROPERTIES = {"length": len}

STRING_METHODS: dict[str, MethodImpl] = {
    "upper": _simple(str.upper),
    "toUpperCase": _simple(str.upper),
    "lower": _simple(str.lower),
    "toLowerCase": _simple(str.lower),
    "strip": lambda _rt, s, chars=None: s.strip(chars),
    "trim": _simple(str.strip),
    "lstrip": lambda _rt, s, chars=None: s.lstrip(chars),
    "rstrip": lambda _rt, s, chars=None: s.rstrip(chars),
    "capitalize": _simple(str.capitalize),
    "title": _simple(str.title),
    "substring": _substring,
    "substr": _substr,
    "charAt": _char_at,
    "indexOf": lambda _rt, s, sub: s.find(sub),
    "find": lambda _rt, s, sub: s.find(sub),
    "count": lambda _rt, s, sub: s.count(sub),
    "contains": lambda _rt, s, sub: str(sub) in s,
    "includes": lambda _rt, s, sub: str(sub) in s,
    "startswith": lambda _rt, s, prefix: s.startswith(prefix),
    "startsWith": lambda _rt, s, prefix: s.startswith(prefix),
    "endswith": lambda _rt, s, suffix: s.endswith(suffix),
    "endsWith": lambda _rt, s, suffix: s.endswith(suffix),
    # The original engine's replace() replaced every occurrence; replaceAll is an alias.
    "replace": lambda _rt, s, old, new: replace_all(s, old, new),
    "replaceAll": lambda _rt, s, old, new: replace_all(s, old, new),
    "regexReplace": lambda _rt, s, pattern, repl: regex_replace(s, pattern, repl),
    "split": _split,
    "hash": _simple(lambda s: hashlib.md5(s.encode("utf-8")).hexdigest()),
    "urlEncode": _simple(lambda s: quote(s, safe="")),
    "urlDecode": _simple(unquote),
    # escape() is a JSON string literal, quotes included, as in the original engine.
    "escape": _simple(lambda s: json.dumps(s, ensure_ascii=False)),
    "unescape": _unescape,
    "reverse": _simple(lambda s: s[::-1]),
    "toString": _simple(str),
    "isdigit": _simple(str.isdigit),
    "isalpha": _simple(str.isalpha),
}
