"""Values Postgres can store: NUL characters and lone surrogates replaced, everywhere.

Postgres `text` and `jsonb` reject U+0000 and the UTF-8 encoder rejects lone surrogates, yet
both are valid in a JSON string a caller may send (`{"text": "a\\u0000b"}`). A projector's
arguments go through `storable` so one such value cannot stall a read model.
"""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATES = range(0xD800, 0xE000)


def storable_text(text: str) -> str:
    if "\x00" in text:
        text = text.replace("\x00", REPLACEMENT)
    if text.isascii():  # O(1) in CPython: the common case ends here
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(REPLACEMENT if ord(c) in _SURROGATES else c for c in text)
    return text


def storable(value: Any) -> Any:
    """``value`` with every string (and object key) in it made storable; shared if unchanged."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {
            (storable_text(k) if isinstance(k, str) else k): storable(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [storable(v) for v in value]
    return value
