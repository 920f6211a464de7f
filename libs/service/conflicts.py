"""Counts optimistic-concurrency conflicts of a service's actors (a health metric and a log line).

With run-partitioned consumers a conflict is a rare event (a handover, a writer outside the
partition such as a node result racing a decision), not the normal path: each one is counted
in the health details (`conflicts`, and per kind) and logged, so a deployment sees them.
"""

from __future__ import annotations

import logging
from collections import Counter

log = logging.getLogger(__name__)


class ConflictCounter:
    def __init__(self, details: dict[str, str] | None = None) -> None:
        self._details = details if details is not None else {}
        self._by_kind: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self._by_kind.values())

    def count(self, kind: str) -> int:
        return self._by_kind[kind]

    def record(self, kind: str, key: str) -> None:
        """One append refused because the aggregate moved on (`kind`: run, agent, chat)."""
        self._by_kind[kind] += 1
        self._details["conflicts"] = str(self.total)
        self._details[f"conflicts_{kind}"] = str(self._by_kind[kind])
        log.info("concurrency conflict on %s %s (%d so far)", kind, key, self.total)
