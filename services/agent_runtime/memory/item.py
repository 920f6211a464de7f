"""One extraction work item as a fold of its events (pure): its request, each target's
recorded model replies, and its end."""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.base import Envelope
from contracts.memory import (
    MemoryExtractionCompleted,
    MemoryExtractionReplied,
    MemoryExtractionRequested,
)


def refused_json(reply: MemoryExtractionReplied) -> bool:
    """The provider refused `response_format` (Heym retries without it)."""
    error = (reply.error or "").lower()
    return reply.json_mode and "response_format" in error and not reply.retryable


@dataclass
class ExtractionItem:
    request: MemoryExtractionRequested | None = None
    replies: dict[int, list[MemoryExtractionReplied]] = field(default_factory=dict)
    completed: MemoryExtractionCompleted | None = None
    last_seq: int = 0

    def answer(self, target: int) -> MemoryExtractionReplied | None:
        """The target's recorded successful reply, if any."""
        return next((r for r in self.replies.get(target, []) if r.error is None), None)

    def failures(self, target: int) -> list[MemoryExtractionReplied]:
        return [r for r in self.replies.get(target, []) if r.error is not None]

    def json_mode(self, target: int) -> bool:
        return not any(refused_json(r) for r in self.failures(target))


def fold(envelopes: list[Envelope]) -> ExtractionItem:
    item = ExtractionItem()
    for env in envelopes:
        item.last_seq = max(item.last_seq, env.sequence)
        ev = env.event
        if isinstance(ev, MemoryExtractionRequested) and item.request is None:
            item.request = ev
        elif isinstance(ev, MemoryExtractionReplied):
            item.replies.setdefault(ev.target, []).append(ev)
        elif isinstance(ev, MemoryExtractionCompleted) and item.completed is None:
            item.completed = ev
    return item
