"""The bounded, redacting copy of an arbitrary value, and the JSON size measure it is kept to."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import msgspec

from libs.observability._redaction_masking import REDACTED, is_sensitive_key, mask_text

TRUNCATED = "...(truncated)"
PAYLOAD_TRUNCATED = "[PAYLOAD_TRUNCATED]"
MAX_DEPTH = "[MAX_DEPTH]"
CYCLE = "[CYCLE]"
# Keys whose string values usually carry JSON documents (tool arguments and results): they
# are parsed so the secrets inside are found by key, then re-serialised.
JSON_STRING_KEYS = frozenset({"args", "arguments", "result", "tool_arguments"})
# A secret straddling the truncation point must still be recognised, so masking looks a
# little past the cut (an unterminated PEM block is masked to the end anyway).
_MASK_LOOKAHEAD = 2048
# Larger JSON strings are masked as plain text rather than parsed.
_MAX_PARSED_CHARS = 4 * 1024 * 1024


def measure(value: Any) -> int:
    """len(json.dumps(value)) with the default separators and ASCII escaping, which is the
    largest of the usual serialisations, so a size bound measured here holds for all."""
    if isinstance(value, Mapping):
        if not value:
            return 2
        inner = sum(len(json.dumps(str(k))) + 2 + measure(v) for k, v in value.items())
        return inner + 2 * len(value)
    if isinstance(value, list | tuple):
        if not value:
            return 2
        return sum(measure(v) for v in value) + 2 * len(value)
    return len(json.dumps(value))


def truncate(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters plus the truncation marker."""
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATED


def fit_string(text: str, size: int) -> str:
    """The longest marked prefix of `text` whose JSON form is at most `size` characters
    (escaping makes the JSON length non-linear in the prefix length, hence the search)."""
    if measure(text) <= size:
        return text
    if text.endswith(TRUNCATED):
        text = text[: -len(TRUNCATED)]
    low, high = 0, min(len(text), size)
    while low < high:
        middle = (low + high + 1) // 2
        if measure(text[:middle] + TRUNCATED) <= size:
            low = middle
        else:
            high = middle - 1
    return text[:low] + TRUNCATED


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    max_string: int = 4096
    max_depth: int = 6
    max_keys: int = 200
    max_items: int = 100


class Sanitizer:
    """One sanitising pass. `seen` holds the containers on the current path only, so a value
    shared by two branches is copied twice, and only a true cycle becomes `[CYCLE]`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._seen: set[int] = set()

    def value(self, value: Any, depth: int = 0) -> Any:
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            # NaN and infinities are not JSON; keep them readable instead.
            return value if math.isfinite(value) else str(value)
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return f"[{len(value)} bytes]"
        if isinstance(value, datetime.date | datetime.time):
            return value.isoformat()
        if isinstance(value, uuid.UUID | Decimal):
            return str(value)
        if isinstance(value, enum.Enum):
            return self.value(value.value, depth)
        if isinstance(value, Mapping | list | tuple | set | frozenset) or _is_record(value):
            return self._container(value, depth)
        return self.text(str(value))

    def text(self, text: str) -> str:
        limit = self.limits.max_string
        window = text[: limit + _MASK_LOOKAHEAD]
        masked = mask_text(window)
        if len(window) < len(text):
            # Masking may have shortened the window; the text was still cut.
            return masked[:limit] + TRUNCATED
        return truncate(masked, limit)

    def field(self, key: Any, value: Any, depth: int = 0) -> Any:
        """The sanitised value stored under `key` in a mapping at `depth`."""
        if is_sensitive_key(key):
            return REDACTED
        if isinstance(value, str) and str(key) in JSON_STRING_KEYS:
            return self.json_text(value, depth)
        return self.value(value, depth)

    def json_text(self, text: str, depth: int = 0) -> str:
        """Sanitise a string that may hold a JSON document, keeping it a string."""
        stripped = text.strip()
        if stripped[:1] in ("{", "[") and len(stripped) <= _MAX_PARSED_CHARS:
            try:
                parsed = json.loads(stripped)
            except ValueError:
                return self.text(text)
            encoded = json.dumps(self.value(parsed, depth), ensure_ascii=False)
            return truncate(encoded, self.limits.max_string)
        return self.text(text)

    def _container(self, value: Any, depth: int) -> Any:
        if depth >= self.limits.max_depth:
            return MAX_DEPTH
        marker = id(value)
        if marker in self._seen:
            return CYCLE
        self._seen.add(marker)
        try:
            if isinstance(value, Mapping) or _is_record(value):
                return self._mapping(_as_mapping(value), depth + 1)
            return self._sequence(value, depth + 1)
        finally:
            self._seen.discard(marker)

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index == self.limits.max_keys:
                result[TRUNCATED] = f"{len(value) - index} more keys"
                break
            result[self.text(str(key))] = self.field(key, item, depth)
        return result

    def _sequence(self, value: Any, depth: int) -> list[Any]:
        items = list(value)
        result = [self.value(item, depth) for item in items[: self.limits.max_items]]
        if len(items) > self.limits.max_items:
            result.append(f"{TRUNCATED} {len(items) - self.limits.max_items} more items")
        return result


def _is_record(value: Any) -> bool:
    return isinstance(value, msgspec.Struct) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    )


def _as_mapping(value: Any) -> Mapping[Any, Any]:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, msgspec.Struct):
        return {name: getattr(value, name) for name in value.__struct_fields__}
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
