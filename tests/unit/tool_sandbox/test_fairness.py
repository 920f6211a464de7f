"""Fair scheduling: one user's slow work holds at most its share; others start at once."""

from __future__ import annotations

import asyncio

import pytest

from services.tool_sandbox.fairness import FairScheduler

pytestmark = pytest.mark.unit


async def test_a_quick_call_of_another_user_starts_while_one_user_has_70_slow_ones() -> None:
    scheduler = FairScheduler("t", limit=64, per_user=16)
    release = asyncio.Event()
    started: list[str] = []

    def slow(name: str):  # type: ignore[no-untyped-def]
        async def job(slot: int) -> None:
            started.append(name)
            await release.wait()

        return job

    for i in range(70):
        scheduler.submit("alice", f"a{i}", slow("alice"))
    quick_done = asyncio.Event()

    async def quick(slot: int) -> None:
        quick_done.set()

    scheduler.submit("bob", "b0", quick)
    await asyncio.wait_for(quick_done.wait(), 1)
    assert started.count("alice") == 16  # the per-user limit, not all 64 slots
    assert scheduler.waiting == 54
    release.set()
    await scheduler.drain(2)


async def test_slots_go_round_robin_between_users_when_the_replica_is_full() -> None:
    scheduler = FairScheduler("t", limit=2, per_user=2)
    order: list[str] = []
    gate = asyncio.Event()

    def job(name: str):  # type: ignore[no-untyped-def]
        async def run(slot: int) -> None:
            order.append(name)
            await gate.wait()

        return run

    for i in range(4):
        scheduler.submit("alice", f"a{i}", job(f"a{i}"))
    for i in range(2):
        scheduler.submit("bob", f"b{i}", job(f"b{i}"))
    await asyncio.sleep(0)
    assert order == ["a0", "a1"]
    gate.set()
    for _ in range(50):
        await asyncio.sleep(0)
    # once slots free, bob is served before alice's remaining work
    assert order[2] == "b0"
    assert order.index("b1") < order.index("a3")


async def test_a_running_job_is_cancelled_and_its_slot_is_freed() -> None:
    scheduler = FairScheduler("t", limit=1, per_user=1)
    cancelled = asyncio.Event()

    async def forever(slot: int) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    ran = asyncio.Event()

    async def after(slot: int) -> None:
        ran.set()

    scheduler.submit("u", "k1", forever)
    scheduler.submit("u", "k2", after)
    await asyncio.sleep(0)
    assert scheduler.cancel("k1")
    await asyncio.wait_for(ran.wait(), 1)
    assert cancelled.is_set()
    assert not scheduler.cancel("unknown")
