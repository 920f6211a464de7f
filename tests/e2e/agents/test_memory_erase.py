"""Deleting a workflow erases its agents' memory (Heym cascades it with the workflow): the
graph rows go, the facts are purged from the log down to a `memory.graph_erased` marker, a
writer that comes later (an extraction still in flight) writes nothing, and another
workflow's memory is untouched."""

from __future__ import annotations

from collections.abc import Iterator

import asyncpg
import httpx
import nats
import pytest

from contracts import subjects
from contracts.memory import MemoryEntityUpserted, MemoryGraphErased, MemoryOrigin
from libs.eventlog import EventLog
from libs.memory.writer import MemoryWriter
from libs.testing.eventually import eventually
from libs.testing.model_server import ModelServer, Reply, Rule, Script
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="ok"))])) as server:
        yield server


async def _remember(c: httpx.AsyncClient, wid: str, *names: str) -> None:
    for name in names:
        r = await c.post(
            f"/api/workflows/{wid}/nodes/a/agent-memory/nodes",
            json={"entity_name": name, "entity_type": "other"},
        )
        assert r.status_code == 201, r.text


async def _rows(system: System, wid: str) -> int:
    conn = await asyncpg.connect(system.database_url)
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM agent_memory_entities WHERE workflow_id = $1", wid
            )
        )
    finally:
        await conn.close()


async def test_deleting_a_workflow_erases_its_memory_from_tables_and_log(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        graph = (
            [n("in", "textInput", "req"), agent("a", "keeper", cred, persistentMemoryEnabled=True)],
            [e("in", "a")],
        )
        doomed = await create(c, *graph)
        kept = await create(c, *graph)
        await _remember(c, doomed, "Ada", "Acme")
        await _remember(c, kept, "Bob")
        await eventually(lambda: _rows(system, doomed), timeout=20)
        await eventually(lambda: _rows(system, kept), timeout=20)

        r = await c.delete(f"/api/workflows/{doomed}")
        assert r.status_code == 204, r.text
        assert (await c.get(f"/api/workflows/{doomed}")).status_code == 404

    async def erased() -> bool:
        return await _rows(system, doomed) == 0

    await eventually(erased, timeout=20)
    nc = await nats.connect(system.nats_url)
    try:
        log = EventLog(nc)
        subject = subjects.memory(doomed, "a")
        left = [env.event for env in await log.read(subject)]
        assert [type(x) for x in left] == [MemoryGraphErased]  # the facts are gone
        # an extraction still in flight when the workflow went writes nothing
        writer = MemoryWriter(log)
        late = MemoryEntityUpserted(
            workflow_id=doomed,
            node_id="a",
            entity_id="late",
            name="Late",
            entity_type="other",
            origin=MemoryOrigin(source="api"),
        )
        change = await writer.change(doomed, "a", lambda g: [late])
        assert change.events == []
        assert [type(env.event) for env in await log.read(subject)] == [MemoryGraphErased]
        # the other workflow's memory is untouched
        assert len(await log.read(subjects.memory(kept, "a"))) >= 1
    finally:
        await nc.close()
    assert await _rows(system, kept) == 1
