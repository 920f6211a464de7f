"""A projector process for the crash test: projects run summaries into a given database."""

from __future__ import annotations

import asyncio
import sys

import nats

from libs.db import create_pool
from libs.projection import ProjectionRunner
from services.scheduler.projection import HistoryProjector


async def main(nats_url: str, database_url: str, name: str) -> None:
    nc = await nats.connect(nats_url)
    pool = await create_pool(database_url)
    projector = HistoryProjector()
    projector.name = name  # type: ignore[misc]
    # small batches so a kill lands between and inside transactions
    runner = ProjectionRunner(nc, pool, projector, batch=16, idle_wait=0.2)
    await runner.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
