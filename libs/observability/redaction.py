"""Redacted, size-bounded copies of agent tool payloads for storage (traces, history, debug).

Only stored observability copies go through here: the live agent loop, the messages sent to
the model and the HITL resume state keep the original values, so every function returns a
new structure and never mutates its input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from libs.observability._redaction_budget import (
    FILES_RESERVATION,
    IDENTITY_KEYS,
    ToolRecord,
    file_metadata,
    fit_all,
    keep_leading,
    reserve_files,
    sanitize_record,
    split_generated_files,
)
from libs.observability._redaction_masking import REDACTED, is_sensitive_key, mask_text
from libs.observability._redaction_sanitizer import (
    CYCLE,
    MAX_DEPTH,
    PAYLOAD_TRUNCATED,
    TRUNCATED,
    Limits,
    Sanitizer,
)
from libs.observability._redaction_trace import fit_trace

__all__ = [
    "CYCLE",
    "FILES_RESERVATION",
    "IDENTITY_KEYS",
    "MAX_DEPTH",
    "PAYLOAD_TRUNCATED",
    "REDACTED",
    "TOTAL_BUDGET",
    "TRUNCATED",
    "is_sensitive_key",
    "mask_text",
    "sanitize",
    "sanitize_tool_records",
    "sanitize_trace_payload",
]

TOTAL_BUDGET = 32768


def sanitize(
    value: Any,
    *,
    max_string: int = 4096,
    max_depth: int = 6,
    max_keys: int = 200,
    max_items: int = 100,
) -> Any:
    """A JSON-able copy of `value` with secrets redacted and every dimension bounded.

    Strings over `max_string` end in `...(truncated)`; containers nested deeper than
    `max_depth` become `[MAX_DEPTH]` and cycles `[CYCLE]`; mappings keep `max_keys` keys and
    sequences `max_items` items, plus one entry saying how many were dropped. Values under
    sensitive keys become `[REDACTED]`, credentials inside strings are masked, and JSON
    strings under `args` / `arguments` / `result` are sanitised as JSON and re-serialised.
    """
    limits = Limits(
        max_string=max_string, max_depth=max_depth, max_keys=max_keys, max_items=max_items
    )
    return Sanitizer(limits).value(value)


def sanitize_tool_records(
    records: list[dict[str, Any]], *, total_budget: int = TOTAL_BUDGET
) -> list[dict[str, Any]]:
    """Sanitised tool-call records whose JSON list fits `total_budget` characters, plus at
    most FILES_RESERVATION characters of `_generated_files` metadata.

    The budget is shared fairly: every record first gets room for its identity, then the
    rest is split evenly, and a share a small record does not need passes on to the larger
    ones, so an early huge result cannot hide later calls. Identity keys
    (IDENTITY_KEYS) come first and always survive; bulky fields are shortened, then replaced
    by `[PAYLOAD_TRUNCATED]`. `_generated_files` found on a record or inside its result is
    reduced to id, filename, download_url, mime_type and size_bytes (at most 20 files) and
    is returned on the record itself, outside the fair share.
    """
    sanitizer = Sanitizer(Limits())
    prepared: list[ToolRecord] = []
    files: list[list[dict[str, Any]]] = []
    for original in records:
        record, found = split_generated_files(original)
        prepared.append(ToolRecord(sanitize_record(record, sanitizer)))
        files.append(file_metadata(found))
    # A JSON list costs two characters per element beyond the elements themselves.
    if fit_all(prepared, total_budget - 2 * len(prepared)):
        out = [r.record for r in prepared]
    else:
        out = keep_leading(prepared, total_budget)
    files_by_record = {id(r.record): f for r, f in zip(prepared, files, strict=True)}
    reserve_files(out, [files_by_record.get(id(entry), []) for entry in out])
    return out


def sanitize_trace_payload(
    payload: Mapping[str, Any], *, total_budget: int = TOTAL_BUDGET
) -> dict[str, Any]:
    """A sanitised copy of one LLM trace write `{request: {messages, tools, ...}, response:
    {..., tool_calls}}` whose JSON fits `total_budget` characters.

    Tool sections (tool messages, assistant `tool_calls`, `response.tool_calls`,
    `_hitl_pending` copies) are records under the fair budget; the rest is sanitised per
    message and, when the write is still too large, its strings shortened and its largest
    parts replaced by `[PAYLOAD_TRUNCATED]`.
    """
    return fit_trace(payload, Sanitizer(Limits()), total_budget)
