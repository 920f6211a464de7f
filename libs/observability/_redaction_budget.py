"""The fair budget: tool records shrunk to even shares so no record can crowd out the others."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from libs.observability._redaction_sanitizer import (
    PAYLOAD_TRUNCATED,
    TRUNCATED,
    Limits,
    Sanitizer,
    fit_string,
    measure,
    truncate,
)

IDENTITY_KEYS = (
    "tool_call_id",
    "id",
    "name",
    "status",
    "source",
    "mcp_server",
    "elapsed_ms",
    "started_at",
    "finished_at",
)
# Shrunk first to last; the remaining non-identity fields follow, last key first.
BULKY_KEYS = ("result", "content", "output", "arguments", "args", "tool_arguments")
# Identity values always survive, but a pathological 1 MB tool name must not.
IDENTITY_MAX_STRING = 256
# Scalars this small are kept as they are: shrinking them would save next to nothing.
SMALL_SCALAR = 64
# A slot that can only keep fewer characters than this is better replaced by the marker.
MIN_USEFUL = 64
MARKER_SIZE = measure(PAYLOAD_TRUNCATED)


def sanitize_record(
    original: Any, sanitizer: Sanitizer, *, content_is_json: bool = False
) -> dict[str, Any]:
    """A sanitised copy of one tool record with its identity keys first."""
    if not isinstance(original, Mapping):
        original = {"result": original}
    ordered = {k: original[k] for k in IDENTITY_KEYS if k in original}
    ordered.update((k, v) for k, v in original.items() if k not in ordered)
    record = sanitizer.value(ordered)
    if not isinstance(record, dict):  # a cycle straight back to the record itself
        return {"result": record}
    content = original.get("content")
    if content_is_json and isinstance(content, str) and "content" in record:
        record["content"] = sanitizer.json_text(content, depth=1)
    function = record.get("function")
    for holder, key in [(record, k) for k in IDENTITY_KEYS] + [(function, "name")]:
        if isinstance(holder, dict) and isinstance(holder.get(key), str):
            holder[key] = truncate(holder[key], IDENTITY_MAX_STRING)
    return record


def compact(value: Any, limit: int, *, cut_containers: bool = True) -> Any:
    """Strings cut to `limit`; with `cut_containers`, lists and mappings cut to a few entries."""
    if isinstance(value, str):
        return truncate(value.removesuffix(TRUNCATED), limit) if len(value) > limit else value
    keep = max(3, limit // 32) if cut_containers else None
    if isinstance(value, dict):
        items = list(value.items())
        out = {k: compact(v, limit, cut_containers=cut_containers) for k, v in items[:keep]}
        if keep is not None and len(items) > keep:
            out[TRUNCATED] = f"{len(items) - keep} more keys"
        return out
    if isinstance(value, list):
        kept = [compact(v, limit, cut_containers=cut_containers) for v in value[:keep]]
        if keep is not None and len(value) > keep:
            kept.append(f"{TRUNCATED} {len(value) - keep} more items")
        return kept
    return value


def shrink(value: Any, target: int) -> Any:
    """A smaller stand-in for `value` measuring at most `target` when target >= MIN_USEFUL,
    else the marker (which never grows a value already smaller than the marker)."""
    size = measure(value)
    if size <= target or size <= MARKER_SIZE:
        return value
    if target < MIN_USEFUL:
        return PAYLOAD_TRUNCATED
    if isinstance(value, str):
        return fit_string(value, target)
    for limit in (1024, 256, 64):
        smaller = compact(value, limit)
        if measure(smaller) <= target:
            return smaller
    return fit_string(json.dumps(value, ensure_ascii=False), target)


class ToolRecord:
    """A sanitised record split into fixed parts (identity, small scalars) and slots that may
    be shrunk, most expendable first."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.slots = _slots(record)

    def size(self) -> int:
        return measure(self.record)

    def min_size(self) -> int:
        saved = sum(max(0, measure(c[k]) - MARKER_SIZE) for c, k in self.slots)
        return self.size() - saved

    def fit(self, allowance: int) -> None:
        """Shrink slots until the record measures at most `allowance` (>= min_size())."""
        excess = self.size() - allowance
        for container, key in self.slots:
            if excess <= 0:
                return
            before = measure(container[key])
            container[key] = shrink(container[key], before - excess)
            excess -= before - measure(container[key])


def _slots(record: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    slots = [(record, k) for k in BULKY_KEYS if k in record and k not in IDENTITY_KEYS]
    function = record.get("function")
    if isinstance(function, dict):
        # OpenAI tool calls nest the bulky arguments under `function`, beside its name.
        slots += [(function, k) for k in function if k != "name"]
    for key in reversed(list(record)):
        if key in IDENTITY_KEYS or key in BULKY_KEYS or (key == "function" and function):
            continue
        value = record[key]
        if isinstance(value, dict | list) or measure(value) > SMALL_SCALAR:
            slots.append((record, key))
    return slots


def allocate(minimums: list[int], wanted: list[int], budget: int) -> list[int]:
    """Water-filling: every record gets its minimum, then the rest of the budget is split
    evenly, a share that a small record does not use passing on to the larger ones."""
    allowances = list(minimums)
    remaining = budget - sum(minimums)
    order = sorted(range(len(wanted)), key=lambda i: wanted[i] - minimums[i])
    for position, index in enumerate(order):
        give = min(wanted[index] - minimums[index], remaining // (len(order) - position))
        allowances[index] += give
        remaining -= give
    return allowances


def fit_all(records: list[ToolRecord], budget: int) -> bool:
    """Fit the records into `budget` characters in total; False if even their minimal forms
    do not fit (the caller then drops records)."""
    wanted = [r.size() for r in records]
    if sum(wanted) <= budget:
        return True
    minimums = [r.min_size() for r in records]
    if sum(minimums) > budget:
        return False
    for record, allowance in zip(records, allocate(minimums, wanted, budget), strict=True):
        record.fit(allowance)
    return True


def omitted_marker(count: int) -> dict[str, Any]:
    return {"status": PAYLOAD_TRUNCATED, "omitted_records": count}


def keep_leading(records: list[ToolRecord], budget: int) -> list[dict[str, Any]]:
    """Last resort when the minimal records alone overflow: the leading records in minimal
    form, then one marker entry counting the records left out. Fits a list into `budget`."""
    kept: list[dict[str, Any]] = []
    used = measure(omitted_marker(len(records))) + 2
    for record in records:
        record.fit(record.min_size())
        cost = record.size() + 2
        if used + cost > budget:
            break
        kept.append(record.record)
        used += cost
    if len(kept) < len(records) and used <= budget:
        kept.append(omitted_marker(len(records) - len(kept)))
    return kept


FILE_KEYS = ("id", "filename", "download_url", "mime_type", "size_bytes")
MAX_FILES = 20
FILES_RESERVATION = 4096
_FILE_VALUES = Sanitizer(Limits(max_string=1024, max_depth=1))


def split_generated_files(original: Any) -> tuple[Any, list[Any]]:
    """Take `_generated_files` from a record or from its result (a mapping or a JSON string),
    so the file metadata can be kept apart from the bulky payload it came with."""
    if not isinstance(original, Mapping):
        return original, []
    files: list[Any] = []
    record = dict(original)
    if isinstance(record.get("_generated_files"), list):
        files += record.pop("_generated_files")
    result = record.get("result")
    if isinstance(result, str) and result.lstrip().startswith("{") and "_generated_files" in result:
        try:
            parsed = json.loads(result)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("_generated_files"), list):
            files += parsed.pop("_generated_files")
            record["result"] = json.dumps(parsed, ensure_ascii=False)
    elif isinstance(result, Mapping) and isinstance(result.get("_generated_files"), list):
        files += result["_generated_files"]
        record["result"] = {k: v for k, v in result.items() if k != "_generated_files"}
    return record, files


def file_metadata(files: list[Any]) -> list[dict[str, Any]]:
    kept = [f for f in files if isinstance(f, Mapping)][:MAX_FILES]
    return [{k: _FILE_VALUES.field(k, f[k]) for k in FILE_KEYS if k in f} for f in kept]


def reserve_files(records: list[dict[str, Any]], files: list[list[dict[str, Any]]]) -> None:
    """Attach file metadata in record order while the shared reservation lasts."""
    left = FILES_RESERVATION
    for record, metadata in zip(records, files, strict=True):
        while metadata:
            cost = measure("_generated_files") + 4 + measure(metadata)
            if cost <= left:
                record["_generated_files"] = metadata
                left -= cost
                break
            metadata = metadata[:-1]
