"""Issue #7 item 9: one user's 70 slow HTTP nodes hold at most their share of the sandbox's
slots, so another user's quick run does not wait for them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from tests.e2e.agents.helpers import create, e, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

PER_USER = 16  # HEYM_SANDBOX_USER_CONCURRENCY's default


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with HttpTarget() as t:
        yield t


async def execute(system: System, key: str, wid: str) -> dict[str, Any]:
    async with system.client(key) as c:
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={"X-Simple-Response": "false"},
        )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_a_quick_run_is_not_held_up_by_another_users_70_slow_http_nodes(
    system: System, target: HttpTarget
) -> None:
    _, slow_key = await system.new_user()
    _, quick_key = await system.new_user()
    gate = uuid.uuid4().hex
    slow_nodes = [n("in", "textInput", "req")] + [
        n(f"h{i}", "http", f"slow{i}", curl=f"curl {target.url}/gate/{gate}") for i in range(70)
    ]
    slow_edges = [e("in", f"h{i}") for i in range(70)]
    async with system.client(slow_key) as c:
        slow_wid = await create(c, slow_nodes, slow_edges)
    async with system.client(quick_key) as c:
        quick_wid = await create(
            c,
            [n("in", "textInput", "req"), n("h", "http", "quick", curl=f"curl {target.url}/echo")],
            [e("in", "h")],
        )
    slow = asyncio.create_task(execute(system, slow_key, slow_wid))
    try:
        path = f"/gate/{gate}"
        await eventually(lambda: target.counts[path] >= PER_USER, timeout=30)
        quick = await asyncio.wait_for(execute(system, quick_key, quick_wid), 30)
        assert quick["status"] == "success", quick
        # the slow user holds exactly its share while waiting, not every slot
        assert target.counts[path] == PER_USER
        assert not slow.done()
    finally:
        target.open_gate(gate)
    done = await asyncio.wait_for(slow, 60)
    assert done["status"] == "success"
    assert target.counts[path] == 70
