"""Small HTML pieces of the inspector's pages: every value that reaches HTML goes through one
of these (or `escape`), so nothing from a run, a model or a tool is written unescaped.

Times, durations and numbers are written plainly (ISO 8601 in UTC, milliseconds, digits) and
marked; `inspector.js` rewrites their text in the viewer's locale and time zone.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import urlencode

import msgspec

# A JSON block longer than this is shown cut (the API has the whole value).
BLOCK_CHARS = 8_000
_SAFE_CLASS = re.compile(r"[^a-z_]")
_encode = msgspec.json.Encoder().encode


def mapping(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (stored values are not trusted)."""
    return value if isinstance(value, dict) else {}


def status_class(status: str | None) -> str:
    return "s-" + (_SAFE_CLASS.sub("", str(status or "").lower())[:20] or "unknown")


def badge(status: str | None, **attrs: str) -> str:
    extra = "".join(f' {k}="{escape(v)}"' for k, v in attrs.items())
    return f'<span class="badge {status_class(status)}"{extra}>{escape(str(status or "-"))}</span>'


def iso(value: datetime | int | float | str | None) -> str | None:
    """An ISO 8601 UTC stamp from a datetime, epoch milliseconds or an ISO string."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, UTC).isoformat()
    return str(value)


def when(value: datetime | int | float | str | None, *, clock: bool = False) -> str:
    stamp = iso(value)
    if stamp is None:
        return "-"
    fmt = ' data-fmt="clock"' if clock else ""
    return f'<time datetime="{escape(stamp)}"{fmt}>{escape(stamp)}</time>'


def duration(ms: float | int | None) -> str:
    if ms is None:
        return "-"
    value = float(ms)
    return f'<span data-ms="{value:.1f}">{value:.0f} ms</span>'


def number(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f'<span data-num="{value}">{value}</span>'


def json_text(value: Any, limit: int = BLOCK_CHARS) -> tuple[str, int]:
    """Indented JSON of a stored value, cut at `limit` characters; and its full length."""
    if isinstance(value, str):
        return value[:limit], len(value)
    try:
        raw = _encode(value)
    except (TypeError, ValueError, OverflowError):
        text = repr(value)
        return text[:limit], len(text)
    if len(raw) <= limit:
        text = msgspec.json.format(raw, indent=2).decode("utf-8", errors="replace")
        if len(text) <= limit * 2:
            return text, len(text)
    text = raw[:limit].decode("utf-8", errors="replace")
    return text, len(raw)


def json_block(value: Any, *, label: str = "", limit: int = BLOCK_CHARS) -> str:
    text, full = json_text(value, limit)
    cut = ""
    if full > len(text):
        cut = (
            f"<p class=meta>Cut at {number(len(text))} of {number(full)} characters; "
            "the API has the whole value.</p>"
        )
    aria = f' aria-label="{escape(label)}"' if label else ""
    return f"<pre class=json{aria}>{escape(text)}</pre>{cut}"


def query(path: str, params: dict[str, Any]) -> str:
    """`path?params` without empty values, escaped for an attribute."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return escape(f"{path}?{urlencode(kept)}" if kept else path)


def pager(path: str, params: dict[str, Any], *, total: int, limit: int, offset: int) -> str:
    first = offset + 1 if total else 0
    last = min(offset + limit, total)
    parts = [f"<span class=meta>{number(first)}–{number(last)} of {number(total)}</span>"]
    if offset > 0:
        prev = max(0, offset - limit)
        parts.append(f'<a rel=prev href="{query(path, {**params, "offset": prev})}">Newer</a>')
    if offset + limit < total:
        nxt = offset + limit
        parts.append(f'<a rel=next href="{query(path, {**params, "offset": nxt})}">Older</a>')
    return f"<nav class=pager aria-label=Pages>{''.join(parts)}</nav>"


def options(choices: list[tuple[str, str]], selected: str | None) -> str:
    out = []
    for value, label in choices:
        mark = " selected" if value == (selected or "") else ""
        out.append(f'<option value="{escape(value)}"{mark}>{escape(label)}</option>')
    return "".join(out)


def safe_link(url: Any) -> str | None:
    """An http(s) URL fit for an href, or None."""
    if isinstance(url, str) and url.startswith(("https://", "http://")) and len(url) < 4096:
        return url
    return None
