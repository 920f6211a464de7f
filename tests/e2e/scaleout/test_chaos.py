"""The short chaos run of CI: 100 mixed runs on a three-node NATS cluster with three scheduler
and two agent-runtime replicas while 5 seeded kills -9 hit any process (a replica, a
nats-server, Postgres). The seed is printed; `HEYM_CHAOS_SEED` replays one. `task chaos` is
the long version (1,000 runs)."""

from __future__ import annotations

import os
import random

import pytest

from tests.chaos.run import chaos

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


async def test_short_chaos_run_loses_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    seed = int(os.environ.get("HEYM_CHAOS_SEED") or random.randrange(1, 2**31))
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        with capsys.disabled():
            print(line, flush=True)

    report = await chaos(
        runs=100, kills=5, seed=seed, cluster=3, concurrency=25, deadline_s=300, say=say
    )
    assert report.ok, f"chaos seed {seed} (replay with HEYM_CHAOS_SEED={seed}):\n" + "\n".join(
        lines + report.lost[:5] + report.wrong[:5] + report.duplicated[:5] + report.diverged
    )
    assert report.completed == 100
    assert len(report.kills) == 5
