"""`StatementBatch`: a projector's SQL for one batch, sent with as few round trips as possible.

Statements run phase by phase (ascending); inside a phase, all rows of one statement go
through one `executemany` (asyncpg pipelines it), statements in the order first seen. A
projector puts inserts in an earlier phase than the updates that need the rows, and keeps
statements of one phase independent of each other's order. One round trip per event caps a
projector near 4k events/s; grouping keeps it ahead of the stream.
"""

from __future__ import annotations

from typing import Any

from libs.db.types import Conn
from libs.projection.storable import storable


class StatementBatch:
    """``storable=True`` makes every argument storable first (NUL and surrogates replaced);
    the runner uses it when a batch failed, so the common path pays nothing for it."""

    def __init__(self, *, storable: bool = False) -> None:
        self._phases: dict[int, dict[str, list[tuple[Any, ...]]]] = {}
        self._storable = storable

    def add(self, sql: str, *args: Any, phase: int = 0) -> None:
        if self._storable:
            args = tuple(storable(a) for a in args)
        self._phases.setdefault(phase, {}).setdefault(sql, []).append(args)

    def __len__(self) -> int:
        return sum(len(rows) for stmts in self._phases.values() for rows in stmts.values())

    async def run(self, conn: Conn) -> None:
        for phase in sorted(self._phases):
            for sql, rows in self._phases[phase].items():
                if len(rows) == 1:
                    await conn.execute(sql, *rows[0])
                else:
                    await conn.executemany(sql, rows)
        self._phases.clear()
