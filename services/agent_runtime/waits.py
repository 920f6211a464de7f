"""Waiting on another aggregate's outcome: a sub-agent's or tool node's result, a child run's end.

A core subscription gives the result as soon as it is appended; the log is checked too (on
start and every few seconds), so a result appended before the wait began, or a message the
subscription missed, is still found.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from contracts import subjects
from contracts.base import Envelope, Event, UnknownEvent
from contracts.nodes import NodeAttemptFailed, NodeCompleted
from contracts.runs import RunCompleted
from libs.eventlog import EventLog

CHECK_EVERY_S = 3.0


class WaitTimeout(TimeoutError):
    pass


async def _wait(
    log: EventLog,
    subject: str,
    pick: Callable[[Event], bool],
    *,
    timeout: float,
    replay: Callable[[], Awaitable[list[Envelope]]],
) -> Event:
    deadline = time.monotonic() + timeout
    async with log.watch(subject) as watch:
        while True:
            for found in await replay():
                if not isinstance(found.event, UnknownEvent) and pick(found.event):
                    return found.event
            slice_end = min(deadline, time.monotonic() + CHECK_EVERY_S)
            while time.monotonic() < slice_end:
                try:
                    env = await asyncio.wait_for(watch.queue.get(), slice_end - time.monotonic())
                except TimeoutError:
                    break
                if not isinstance(env.event, UnknownEvent) and pick(env.event):
                    return env.event
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"nothing on {subject} within {timeout:.0f}s")


async def node_result(
    log: EventLog, run_id: str, invocation_id: str, *, timeout: float
) -> NodeCompleted | NodeAttemptFailed:
    subject = subjects.node(run_id, invocation_id)

    async def read() -> list[Envelope]:
        return await log.read(subject)

    found = await _wait(
        log,
        subject,
        lambda e: isinstance(e, NodeCompleted | NodeAttemptFailed),
        timeout=timeout,
        replay=read,
    )
    assert isinstance(found, NodeCompleted | NodeAttemptFailed)
    return found


async def run_completed(log: EventLog, run_id: str, *, timeout: float) -> RunCompleted:
    async def read() -> list[Envelope]:
        return await log.read(f"heym.run.{run_id}.sched.*")

    found = await _wait(
        log,
        f"heym.run.{run_id}.sched.*",
        lambda e: isinstance(e, RunCompleted),
        timeout=timeout,
        replay=read,
    )
    assert isinstance(found, RunCompleted)
    return found
