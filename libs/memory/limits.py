"""Size bounds of a memory graph: what one entity, relationship and extraction may hold.

Extraction output is the model's and bounded here (long values cut, extra keys and items
dropped, each drop named); the REST API refuses what is over the bounds with a 422 instead.
One extraction's batch stays far below the event log's message limit: 200 entities of at
most 16 KiB and 400 relationships of at most 4 KiB.
"""

from __future__ import annotations

import json
from typing import Any, Final

MAX_NAME: Final = 255
MAX_TYPE: Final = 50
MAX_RELATIONSHIP_TYPE: Final = 100
MAX_VALUE_CHARS: Final = 2000
MAX_KEYS: Final = 100
MAX_ENTITY_PROPERTIES_BYTES: Final = 16 * 1024
MAX_RELATIONSHIP_PROPERTIES_BYTES: Final = 4 * 1024
MAX_EXTRACTED_ENTITIES: Final = 200
MAX_EXTRACTED_RELATIONSHIPS: Final = 400
MAX_REVOKED: Final = 200
# All properties of one extraction answer together (what is recorded of a long answer).
MAX_EXTRACTION_PROPERTIES_BYTES: Final = 1024 * 1024
MAX_GRAPH_ENTITIES: Final = 5000
MAX_GRAPH_RELATIONSHIPS: Final = 10000
TRUNCATED: Final = "…(truncated)"


def json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def confidence(value: Any) -> float:
    """A confidence in [0, 1]; anything unusable is 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    if number != number:  # NaN
        return 0.0
    return min(1.0, max(0.0, number))


def bounded_properties(
    props: dict[str, Any], max_bytes: int, dropped: list[str], what: str
) -> dict[str, Any]:
    """`props` within the bounds: long strings cut, values too large as JSON and keys past
    `MAX_KEYS` or `max_bytes` left out (each named in `dropped`)."""
    out: dict[str, Any] = {}
    used = 2
    for raw_key, value in props.items():
        key = str(raw_key)[:MAX_NAME]
        if len(out) >= MAX_KEYS:
            dropped.append(f"{what}: properties past {MAX_KEYS} keys")
            break
        if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
            value = value[: MAX_VALUE_CHARS - len(TRUNCATED)] + TRUNCATED
            dropped.append(f"{what}: property {key!r} cut to {MAX_VALUE_CHARS} characters")
        elif not isinstance(value, str) and json_size(value) > MAX_VALUE_CHARS:
            dropped.append(f"{what}: property {key!r} left out ({json_size(value)} bytes)")
            continue
        size = json_size({key: value}) - 1
        if used + size > max_bytes:
            dropped.append(f"{what}: property {key!r} left out (properties over {max_bytes} B)")
            continue
        out[key] = value
        used += size
    return out


def clean_text(value: Any, limit: int) -> str:
    return str(value if value is not None else "").strip()[:limit]
