"""A deliberately non-idempotent projector for the atomic-commit test: each event adds one to a
counter, so a batch applied twice (rows committed, position not) or lost (position committed,
rows not) shows in the count."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

import nats

from contracts import subjects
from contracts.base import Envelope
from libs.db import create_pool
from libs.projection import ProjectionRunner
from libs.projection.statements import StatementBatch

TABLE = """CREATE TABLE IF NOT EXISTS projection_counts (
    name text PRIMARY KEY, events bigint NOT NULL DEFAULT 0)"""


class CountingProjector:
    filter_subjects: Sequence[str] = (subjects.ALL_RUN_EVENTS,)

    def __init__(self, name: str) -> None:
        self.name = name

    def project(self, envelope: Envelope, sql: StatementBatch) -> None:
        sql.add(
            """INSERT INTO projection_counts (name, events) VALUES ($1, 1)
               ON CONFLICT (name) DO UPDATE SET events = projection_counts.events + 1""",
            self.name,
        )


async def main(nats_url: str, database_url: str, name: str) -> None:
    nc = await nats.connect(nats_url)
    pool = await create_pool(database_url)
    # small batches so a kill lands between and inside transactions
    runner = ProjectionRunner(nc, pool, CountingProjector(name), batch=16, idle_wait=0.2)
    await runner.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
