"""Memory graphs on the event log: the Postgres tables are a projection that rebuilds to the
same graph, and concurrent writers never lose a change (expected-sequence appends)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client as NATS

from contracts.memory import MemoryOrigin
from libs.db import create_pool
from libs.db.pool import init_connection
from libs.eventlog import EventLog
from libs.memory import edits
from libs.memory.extraction import parse_extraction
from libs.memory.graph import MemoryGraph
from libs.memory.merge import merge_extraction
from libs.memory.writer import MemoryWriter
from libs.projection import ProjectionRunner
from libs.testing import infra
from libs.testing.eventually import eventually
from services.agent_runtime.memory.projection import MemoryProjector

pytestmark = pytest.mark.integration


class Named(MemoryProjector):
    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]


async def extract(writer: MemoryWriter, wid: str, node: str, item: str, answer: Any) -> None:
    origin = MemoryOrigin(source="extraction", run_id="r", invocation_id=item, item_id=item)
    parsed = parse_extraction(json.dumps(answer))
    await writer.change(
        wid, node, lambda g: merge_extraction(g, parsed, origin, f"{item}/{wid}/{node}")
    )


async def write_history(writer: MemoryWriter, wid: str) -> None:
    """Creations, merges, revocations, single-slot replacements, pruning and hand edits."""
    rel = lambda s, t, d: {"source": s, "type": t, "target": d}  # noqa: E731
    await extract(
        writer,
        wid,
        "a",
        "i1",
        {
            "entities": [{"name": n} for n in ("Ada", "Acme", "tea", "London")],
            "relationships": [rel("Ada", "works for", "Acme"), rel("Ada", "likes", "tea")],
        },
    )
    user = MemoryOrigin(source="api", user_id="u")
    fields = edits.entity_fields({"entity_name": "Note", "properties": {"k": 1}}, partial=False)
    await writer.change(wid, "a", lambda g: edits.create_entity(g, fields, user, "note-" + wid))
    await extract(
        writer,
        wid,
        "a",
        "i2",
        {
            "revoked_entities": ["tea"],
            "entities": [{"name": "Globex"}, {"name": "ADA", "properties": {"age": 36}}],
            "relationships": [rel("Ada", "works_for", "Globex"), rel("Ada", "lives in", "London")],
        },
    )
    for other in ("b", "c"):
        await extract(writer, wid, other, f"i3{other}", {"entities": [{"name": other}]})
    graph = await writer.load(wid, "a")
    ada = graph.find("ada")
    assert ada is not None
    upd = edits.entity_fields({"properties": {"age": 37}}, partial=True)
    await writer.change(wid, "a", lambda g: edits.update_entity(g, ada.id, upd, user))
    await writer.change(wid, "c", lambda g: edits.delete_entity(g, g.find("c").id, user))  # type: ignore[union-attr]


async def snapshot(url: str, wid: str) -> dict[str, list[dict[str, Any]]]:
    conn = await asyncpg.connect(url)
    await init_connection(conn)  # jsonb as Python values
    try:
        ents = await conn.fetch(
            "SELECT * FROM agent_memory_entities WHERE workflow_id = $1 ORDER BY id", wid
        )
        rels = await conn.fetch(
            "SELECT * FROM agent_memory_relationships WHERE workflow_id = $1 ORDER BY id", wid
        )
        return {"entities": [dict(r) for r in ents], "relationships": [dict(r) for r in rels]}
    finally:
        await conn.close()


async def project(nc: NATS, log: EventLog, url: str, *, batch: int) -> None:
    pool = await create_pool(url)
    runner = ProjectionRunner(
        nc, pool, Named(f"mem-{uuid.uuid4().hex[:8]}"), event_log=log, batch=batch
    )
    task = asyncio.create_task(runner.run())
    last = await log.last_sequence("heym.memory.>")
    try:
        await eventually(lambda: runner.position >= last, timeout=30, message="projector lag")
    finally:
        runner.stop()
        await task
        await pool.close()


def as_fold(graph: MemoryGraph) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    return (
        {(e.id, e.name, json.dumps(e.properties, sort_keys=True)) for e in graph.entities.values()},
        {
            (r.id, r.source_id, r.target_id, r.relationship_type)
            for r in graph.relationships.values()
        },
    )


def as_rows(snap: dict[str, list[dict[str, Any]]], node: str) -> tuple[set[Any], set[Any]]:
    return (
        {
            (r["id"], r["entity_name"], json.dumps(r["properties"], sort_keys=True))
            for r in snap["entities"]
            if r["canvas_node_id"] == node
        },
        {
            (r["id"], r["source_id"], r["target_id"], r["relationship_type"])
            for r in snap["relationships"]
            if r["canvas_node_id"] == node
        },
    )


async def test_rebuilding_the_projection_from_the_memory_events_gives_the_same_graph(
    nc: NATS, event_log: EventLog, database_url: str, pg_admin_url: str, pg_template: str
) -> None:
    wid = str(uuid.uuid4())
    writer = MemoryWriter(event_log)
    await write_history(writer, wid)

    await project(nc, event_log, database_url, batch=1)  # one message per transaction
    first = await snapshot(database_url, wid)
    async with infra.fresh_database(pg_admin_url, pg_template) as rebuilt_url:
        await project(nc, event_log, rebuilt_url, batch=512)  # everything in one batch
        rebuilt = await snapshot(rebuilt_url, wid)
    assert rebuilt == first  # every column: ids, timestamps, writers, sequences

    for node in ("a", "b", "c"):
        assert as_rows(first, node) == as_fold(await writer.load(wid, node))
    names = {r["entity_name"] for r in first["entities"] if r["canvas_node_id"] == "a"}
    assert names == {"ADA", "Globex", "London", "Note"}  # tea revoked, Acme replaced+pruned
    kinds = {r["relationship_type"] for r in first["relationships"]}
    assert kinds == {"works_for", "lives in"}
    ada = next(r for r in first["entities"] if r["entity_name"] == "ADA")
    assert ada["properties"] == {"age": 37}
    assert ada["origin"]["source"] == "api"  # the last writer: a person's edit
    globex = next(r for r in first["entities"] if r["entity_name"] == "Globex")
    assert globex["origin"]["item_id"] == "i2"  # "why does it believe this": run i2's merge


async def test_concurrent_writers_lose_no_change(event_log: EventLog) -> None:
    """Eight extractions merge a property each into one entity at the same time: each decided
    on the graph it read, so without the expected-sequence check all but one would be lost."""
    wid = str(uuid.uuid4())
    writer = MemoryWriter(event_log)
    await extract(writer, wid, "n", "i", {"entities": [{"name": "Ada", "properties": {"k": 0}}]})

    async def add(i: int) -> int:
        origin = MemoryOrigin(source="extraction", item_id=f"i{i}")
        parsed = parse_extraction(
            json.dumps({"entities": [{"name": "Ada", "properties": {f"p{i}": i}}]})
        )
        change = await writer.change(
            wid, "n", lambda g: merge_extraction(g, parsed, origin, f"i{i}")
        )
        return change.sequence

    sequences = await asyncio.gather(*(add(i) for i in range(8)))
    assert len(set(sequences)) == 8
    (ada,) = (await writer.load(wid, "n")).entities.values()
    assert ada.properties == {"k": 0, **{f"p{i}": i for i in range(8)}}
