"""Fitting one LLM trace write (request + response) into its budget, tool sections fairly."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from libs.observability._redaction_budget import (
    MARKER_SIZE,
    ToolRecord,
    compact,
    fit_all,
    keep_leading,
    sanitize_record,
)
from libs.observability._redaction_sanitizer import (
    PAYLOAD_TRUNCATED,
    TRUNCATED,
    Sanitizer,
    measure,
)

_Handler = Callable[[Any], Any]


class _Slot:
    """Stands in the frame for a tool record, which is budgeted separately."""

    def __init__(self, record: ToolRecord) -> None:
        self.record = record


class _Frame:
    """Builds the trace's frame: everything but the tool records, sanitised per message so
    the depth limit counts from each message rather than from the trace root."""

    def __init__(self, sanitizer: Sanitizer) -> None:
        self.sanitizer = sanitizer
        self.records: list[ToolRecord] = []

    def slot(self, original: Any, *, content_is_json: bool = False) -> _Slot:
        record = ToolRecord(
            sanitize_record(original, self.sanitizer, content_is_json=content_is_json)
        )
        self.records.append(record)
        return _Slot(record)

    def mapping(self, value: Mapping[Any, Any], handlers: Mapping[str, _Handler]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            handler = handlers.get(str(key))
            name = self.sanitizer.text(str(key))
            out[name] = handler(item) if handler is not None else self.sanitizer.field(key, item)
        return out

    def items(self, value: Any, each: _Handler) -> Any:
        if not isinstance(value, list | tuple):
            return self.sanitizer.value(value)
        limit = self.sanitizer.limits.max_items
        kept = [each(item) for item in value[:limit]]
        if len(value) > limit:
            kept.append(f"{TRUNCATED} {len(value) - limit} more items")
        return kept

    def payload(self, value: Mapping[Any, Any]) -> dict[str, Any]:
        return self.mapping(
            value,
            {"request": self.request, "response": self.response, "_hitl_pending": self.slot},
        )

    def request(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return self.sanitizer.value(value)
        return self.mapping(value, {"messages": lambda v: self.items(v, self.message)})

    def response(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return self.sanitizer.value(value)
        handlers: dict[str, _Handler] = {
            "tool_calls": lambda v: self.items(v, self.slot),
            "_hitl_pending": self.slot,
            "message": self.message,
            "choices": lambda v: self.items(v, self.choice),
        }
        return self.mapping(value, handlers)

    def choice(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return self.sanitizer.value(value)
        return self.mapping(value, {"message": self.message})

    def message(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return self.sanitizer.value(value)
        if value.get("role") == "tool":
            return self.slot(value, content_is_json=True)
        return self.mapping(value, {"tool_calls": lambda v: self.items(v, self.slot)})


def _size(value: Any, *, floor: bool = False, root: bool = True) -> int:
    """JSON size of the frame with tool slots counted as empty; with `floor`, the smallest
    size reachable by collapsing slot-free subtrees (never the root) into the marker."""
    if isinstance(value, _Slot):
        return 0
    if isinstance(value, dict):
        inner = sum(measure(k) + 2 + _size(v, floor=floor, root=False) for k, v in value.items())
        size = inner + 2 * len(value) if value else 2
    elif isinstance(value, list):
        inner = sum(_size(v, floor=floor, root=False) for v in value)
        size = inner + 2 * len(value) if value else 2
    else:
        size = measure(value)
    if floor and not root and not _has_slot(value):
        return min(size, MARKER_SIZE)
    return size


def _has_slot(value: Any) -> bool:
    if isinstance(value, _Slot):
        return True
    if isinstance(value, dict):
        return any(_has_slot(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_slot(v) for v in value)
    return False


def _largest_collapsible(value: Any) -> tuple[int, Any, Any]:
    """(size, container, key) of the largest slot-free subtree worth collapsing."""
    best: tuple[int, Any, Any] = (MARKER_SIZE, None, None)
    children = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in children:
        if isinstance(child, dict | list) and _has_slot(child):
            candidate = _largest_collapsible(child)
        elif not isinstance(child, _Slot):
            candidate = (measure(child), value, key)
        else:
            continue
        if candidate[0] > best[0]:
            best = candidate
    return best


def _shrink_frame(frame: dict[str, Any], budget: int) -> None:
    """Shorten the frame's strings step by step, then collapse its largest slot-free parts,
    until it fits `budget` (which must be at least its floor size)."""
    for limit in (2048, 1024, 512, 256, 128, 64):
        if _size(frame) <= budget:
            return
        frame.update(compact(frame, limit, cut_containers=False))
    while _size(frame) > budget:
        _, container, key = _largest_collapsible(frame)
        if container is None:
            return
        container[key] = PAYLOAD_TRUNCATED


def _unslot(value: Any) -> Any:
    if isinstance(value, _Slot):
        return value.record.record
    if isinstance(value, dict):
        return {k: _unslot(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unslot(v) for v in value]
    return value


def fit_trace(payload: Mapping[Any, Any], sanitizer: Sanitizer, budget: int) -> dict[str, Any]:
    builder = _Frame(sanitizer)
    frame = builder.payload(payload)
    records = builder.records
    tools_full = sum(r.size() for r in records)
    tools_min = sum(r.min_size() for r in records)
    frame_full, frame_floor = _size(frame), _size(frame, floor=True)
    if frame_full + tools_full <= budget:
        return dict(_unslot(frame))
    if frame_floor + tools_min > budget:
        # Too many tool records to keep even their identities inside the trace: keep the
        # leading ones in a compact summary rather than exceed the budget.
        summary: dict[str, Any] = {"truncated": PAYLOAD_TRUNCATED, "tool_records": []}
        if measure(summary) > budget:
            return {}
        listed = keep_leading(records, budget - measure(summary) + 2)
        return {**summary, "tool_records": listed}
    # Tool sections get what they need when the rest is small, and at least half the budget
    # when both compete; the frame keeps at least its floor. The frame is fitted first so
    # whatever its coarse shrinking leaves unused goes to the tool records.
    tools_budget = min(tools_full, max(budget - frame_full, budget // 2, tools_min))
    _shrink_frame(frame, max(budget - tools_budget, frame_floor))
    fit_all(records, budget - _size(frame))
    return dict(_unslot(frame))
