"""Agent persistent memory end to end (Heym §7): extraction after a run, the next run's prompt,
sharing between agents (read and write, across workflows), a runtime killed between a run's
answer and its extraction, and hostile input (malformed extraction, huge properties, shares
to another user's node)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import nats
import pytest

from contracts import subjects
from contracts.memory import (
    MemoryExtractionCompleted,
    MemoryExtractionMerged,
    MemoryExtractionRequested,
)
from libs.eventlog import EventLog
from libs.testing.eventually import eventually
from libs.testing.model_server import LedgerEntry, Match, ModelServer, Reply, Rule, Script
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

EXTRACTING = "long-term memory of an AI agent"


def extraction_rule(answer: Any, **kw: Any) -> Rule:
    return Rule(
        name="extract", when=Match(system_contains=EXTRACTING), reply=Reply(json=answer, **kw)
    )


ADA = {
    "revoked_entities": [],
    "entities": [
        {"name": "Ada", "type": "person", "properties": {"role": "engineer"}, "confidence": 0.9},
        {"name": "Acme", "type": "organization", "properties": {}, "confidence": 0.8},
    ],
    "relationships": [{"source": "Ada", "target": "Acme", "type": "works for", "confidence": 0.9}],
}


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


def extractions(model: ModelServer) -> list[LedgerEntry]:
    return [r for r in model.chat_requests if r.rule_name == "extract"]


def agent_requests(model: ModelServer) -> list[LedgerEntry]:
    return [r for r in model.chat_requests if r.rule_name == "answer"]


def system_prompt(entry: LedgerEntry) -> str:
    first = entry.body["messages"][0]
    return str(first["content"]) if first["role"] == "system" else ""


async def execute(c: httpx.AsyncClient, wid: str, text: str) -> dict[str, Any]:
    r = await c.post(
        f"/api/workflows/{wid}/execute",
        json={"text": text},
        headers={"X-Simple-Response": "false"},
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def graph(c: httpx.AsyncClient, wid: str, node: str) -> dict[str, Any]:
    r = await c.get(f"/api/workflows/{wid}/nodes/{node}/agent-memory/graph")
    assert r.status_code == 200, r.text
    return dict(r.json())


def names(g: dict[str, Any]) -> set[str]:
    return {x["entity_name"] for x in g["nodes"]}


async def completed(system: System, run_id: str) -> list[MemoryExtractionCompleted]:
    return [
        env.event
        for env in await system.events(run_id)
        if isinstance(env.event, MemoryExtractionCompleted)
    ]


async def test_a_fact_from_one_run_is_in_the_next_runs_prompt(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    model.script = Script(
        rules=[extraction_rule(ADA), Rule(name="answer", reply=Reply(text="noted"))]
    )
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await create(
            c,
            [n("in", "textInput", "req"), agent("a", "helper", cred, persistentMemoryEnabled=True)],
            [e("in", "a")],
        )
        first = await execute(c, wid, "I am Ada and I work for Acme")
        assert first["status"] == "success"
        assert "Persistent memory" not in system_prompt(agent_requests(model)[0])
        await eventually(lambda: graph_has(c, wid, "a", {"Ada", "Acme"}), timeout=20)
        g = await graph(c, wid, "a")
        (rel,) = g["edges"]
        assert rel["relationship_type"] == "works for"
        ada = next(x for x in g["nodes"] if x["entity_name"] == "Ada")
        # audit: the run that wrote the fact, and the turn it ended on
        assert ada["written_by"]["run_id"] == first["execution_history_id"]
        assert ada["written_by"]["source"] == "extraction"
        assert ada["written_by"]["turn"] == 1
        assert ada["properties"] == {"role": "engineer"}

        await execute(c, wid, "Where do I work?")
        prompt = system_prompt(agent_requests(model)[-1])
        assert "### Persistent memory" in prompt
        assert "- Ada (person)" in prompt
        assert "- Ada —[works for]→ Acme" in prompt

        traces = (await c.get("/api/traces", params={"source": "agent_memory"})).json()
        assert traces["total"] >= 1
        assert {t["source"] for t in traces["items"]} == {"agent_memory"}
        assert traces["items"][0]["node_label"] == "helper"
    # the extraction asked for JSON at temperature 0.2, with the run's transcript
    body = extractions(model)[0].body
    assert body["temperature"] == 0.2
    assert body["response_format"] == {"type": "json_object"}
    assert "I am Ada and I work for Acme" in body["messages"][1]["content"]
    assert "noted" in body["messages"][1]["content"]


async def graph_has(c: httpx.AsyncClient, wid: str, node: str, wanted: set[str]) -> bool:
    return wanted <= names(await graph(c, wid, node))


async def test_sharing_read_shows_the_graph_and_write_lets_extraction_merge_into_it(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    fact = {
        "entities": [{"name": "Bob", "type": "person"}, {"name": "Paris", "type": "place"}],
        "relationships": [{"source": "Bob", "target": "Paris", "type": "lives in"}],
    }
    model.script = Script(
        rules=[extraction_rule(fact), Rule(name="answer", reply=Reply(text="ok"))]
    )
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        # B (the peer) in its own workflow, keeping its own memory too
        wid_b = await create(
            c,
            [n("in", "textInput", "req"), agent("b", "peer", cred, persistentMemoryEnabled=True)],
            [e("in", "b")],
        )

        def owner(permission: str) -> list[dict[str, Any]]:
            share = {"peerWorkflowId": wid_b, "peerCanvasNodeId": "b", "permission": permission}
            return [
                n("in", "textInput", "req"),
                agent("a", "keeper", cred, persistentMemoryEnabled=True, memoryShares=[share]),
            ]

        wid_a = await create(c, owner("read"), [e("in", "a")])
        for name in ("Ada", "Acme"):
            r = await c.post(
                f"/api/workflows/{wid_a}/nodes/a/agent-memory/nodes",
                json={"entity_name": name, "entity_type": "other"},
            )
            assert r.status_code == 201, r.text
        r = await c.post(
            f"/api/workflows/{wid_a}/nodes/a/agent-memory/edges",
            json={
                "source_entity_name": "Ada",
                "target_entity_name": "Acme",
                "relationship_type": "works for",
            },
        )
        assert r.status_code == 201, r.text

        run = await execute(c, wid_b, "Bob lives in Paris")
        prompt = system_prompt(agent_requests(model)[-1])
        assert "### Shared agent memory (from `keeper`, read-only)" in prompt
        assert "- Ada —[works for]→ Acme" in prompt
        await eventually(lambda: finished(system, run["execution_history_id"]), timeout=20)
        assert len(extractions(model)) == 1  # B's own graph only
        # the graph is a projection of the memory log: it follows the completion shortly
        await eventually(lambda: graph_has(c, wid_b, "b", {"Bob", "Paris"}), timeout=10)
        assert names(await graph(c, wid_b, "b")) == {"Bob", "Paris"}
        assert names(await graph(c, wid_a, "a")) == {"Ada", "Acme"}  # read: untouched

        r = await c.put(f"/api/workflows/{wid_a}", json={"nodes": owner("write")})
        assert r.status_code == 200, r.text
        run = await execute(c, wid_b, "Bob lives in Paris")
        prompt = system_prompt(agent_requests(model)[-1])
        assert "### Shared agent memory (from `keeper`, read/write)" in prompt
        await eventually(lambda: finished(system, run["execution_history_id"]), timeout=20)
        assert len(extractions(model)) == 3  # B's graph and A's, one call each
        await eventually(lambda: graph_has(c, wid_a, "a", {"Bob", "Paris"}), timeout=10)
        assert names(await graph(c, wid_a, "a")) == {"Ada", "Acme", "Bob", "Paris"}


async def finished(system: System, run_id: str) -> bool:
    return bool(await completed(system, run_id))


async def test_kill_9_between_the_answer_and_the_extraction_extracts_exactly_once(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    model.script = Script(
        rules=[extraction_rule(ADA), Rule(name="answer", reply=Reply(text="noted", delay=1.0))]
    )
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await create(
            c,
            [n("in", "textInput", "req"), agent("a", "helper", cred, persistentMemoryEnabled=True)],
            [e("in", "a")],
        )
        run = asyncio.create_task(execute(c, wid, "I am Ada and I work for Acme"))
        await eventually(lambda: len(agent_requests(model)) == 1, timeout=30)
        # The agent holds its credential from now on; the extraction has to read it. Hold the
        # credentials table so the extraction stops right before its model call.
        lock = await asyncpg.connect(system.database_url)
        tx = lock.transaction()
        await tx.start()
        try:
            await lock.execute("LOCK TABLE credentials IN ACCESS EXCLUSIVE MODE")
            body = await asyncio.wait_for(run, 30)
            assert body["status"] == "success"
            run_id = body["execution_history_id"]
            # the answer came while the extraction had not asked the model yet
            assert extractions(model) == []
            await eventually(lambda: waiting_on_credentials(lock), timeout=20)
            events = [env.event for env in await system.events(run_id)]
            assert sum(isinstance(x, MemoryExtractionRequested) for x in events) == 1
            assert not any(isinstance(x, MemoryExtractionCompleted) for x in events)
            await system.kill("agent_runtime")
        finally:
            await tx.rollback()
            await lock.close()
        await system.restart("agent_runtime")
        await eventually(lambda: finished(system, run_id), timeout=40)
        await eventually(lambda: graph_has(c, wid, "a", {"Ada", "Acme"}), timeout=10)
    envs = await system.events(run_id)
    assert sum(isinstance(env.event, MemoryExtractionCompleted) for env in envs) == 1
    assert len(extractions(model)) == 1  # exactly one extraction model request
    # A second delivery of the finished item (a duplicate request) changes nothing.
    request = next(env for env in envs if isinstance(env.event, MemoryExtractionRequested))
    seq = await append(system, request.subject, request.event)
    await eventually(lambda: consumed(system, "agent_runtime-extraction", seq), timeout=20)
    assert len(extractions(model)) == 1
    merges = [
        env.event
        for env in await memory_events(system, wid, "a")
        if isinstance(env.event, MemoryExtractionMerged)
    ]
    assert len(merges) == 1


async def memory_traces(c: httpx.AsyncClient, count: int) -> bool:
    traces = (await c.get("/api/traces", params={"source": "agent_memory"})).json()
    return bool(traces["total"] == count)


async def append(system: System, subject: str, event: Any) -> int:
    nc = await nats.connect(system.nats_url)
    try:
        return (await EventLog(nc).append(subject, [event])).sequence
    finally:
        await nc.close()


async def consumed(system: System, durable: str, sequence: int) -> bool:
    """The consumer has handled everything up to `sequence` (delivered and acknowledged)."""
    nc = await nats.connect(system.nats_url)
    try:
        info = await nc.jetstream().consumer_info(subjects.RUN_STREAM, durable)
        return info.ack_floor.stream_seq >= sequence and info.num_ack_pending == 0
    finally:
        await nc.close()


async def waiting_on_credentials(conn: asyncpg.Connection[Any]) -> bool:
    # A lock request on the table, not the waiting session's query text: a statement that is
    # prepared for the first time on its pooled connection waits in parse analysis, and
    # pg_stat_activity still shows that connection's previous query then.
    found = await conn.fetchval(
        """SELECT count(*) FROM pg_locks
           WHERE NOT granted AND locktype = 'relation' AND relation = 'credentials'::regclass"""
    )
    return bool(found)


async def memory_events(system: System, wid: str, node: str) -> list[Any]:
    nc = await nats.connect(system.nats_url)
    try:
        return await EventLog(nc).read(subjects.memory(wid, node))
    finally:
        await nc.close()


async def test_bad_input_gets_clear_errors_or_bounded_storage(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    _, other_key = await system.new_user()
    huge = "x" * 1_000_000
    model.script = Script(
        rules=[
            Rule(
                name="extract",
                when=Match(
                    system_contains=EXTRACTING, predicate=lambda r: "garbled" in str(r.body)
                ),
                reply=Reply(text="Sure! Here is what I remember: Ada, Acme."),
            ),
            extraction_rule(
                {
                    "entities": [
                        {"name": "Zed", "type": "person", "properties": {"bio": huge, "age": 3}},
                        {"name": "Zoo", "type": "place"},
                    ],
                    "relationships": [{"source": "Zed", "target": "Zoo", "type": "visits"}],
                }
            ),
            Rule(name="answer", reply=Reply(text="ok")),
        ]
    )
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await create(
            c,
            [n("in", "textInput", "req"), agent("a", "helper", cred, persistentMemoryEnabled=True)],
            [e("in", "a")],
        )
        r = await c.post(
            f"/api/workflows/{wid}/nodes/a/agent-memory/nodes",
            json={"entity_name": "Keep", "entity_type": "note"},
        )
        assert r.status_code == 201, r.text

        # malformed extraction JSON: the run succeeds, the extraction fails clearly, nothing lost
        body = await execute(c, wid, "garbled")
        assert body["status"] == "success"
        run_id = body["execution_history_id"]
        await eventually(lambda: finished(system, run_id), timeout=20)
        (end,) = await completed(system, run_id)
        assert end.status == "error"
        assert "not JSON" in end.results[0]["error"]
        assert names(await graph(c, wid, "a")) == {"Keep"}
        # the failed extraction is traced too
        await eventually(lambda: memory_traces(c, 1), timeout=10)

        # a 1 MB property from the model: stored bounded, the rest of the answer merged
        body = await execute(c, wid, "Zed visits the zoo")
        await eventually(lambda: graph_has(c, wid, "a", {"Zed", "Zoo"}), timeout=20)
        zed = next(x for x in (await graph(c, wid, "a"))["nodes"] if x["entity_name"] == "Zed")
        assert zed["properties"]["age"] == 3
        assert len(zed["properties"]["bio"]) <= 2000
        assert names(await graph(c, wid, "a")) == {"Keep", "Zed", "Zoo"}

        # a 1 MB property over REST: refused, nothing changed
        r = await c.post(
            f"/api/workflows/{wid}/nodes/a/agent-memory/nodes",
            json={"entity_name": "Huge", "properties": {"bio": huge}},
        )
        assert r.status_code == 422, r.text
        assert "properties" in r.json()["detail"]
        keep = next(x for x in (await graph(c, wid, "a"))["nodes"] if x["entity_name"] == "Keep")
        r = await c.put(
            f"/api/workflows/{wid}/agent-memory/nodes/{keep['id']}", json={"confidence": 7}
        )
        assert r.status_code == 422, r.text
        assert names(await graph(c, wid, "a")) == {"Keep", "Zed", "Zoo"}

        # a share naming another user's node, or no node at all: refused at save time
    async with system.client(other_key) as oc:
        other_cred = await model_credential(oc, model)
        theirs = await create(oc, [agent("x", "theirs", other_cred)], [])
    async with system.client(key) as c:
        for share in (
            {"peerWorkflowId": theirs, "peerCanvasNodeId": "x", "permission": "write"},
            {"peerWorkflowId": str(uuid.uuid4()), "peerCanvasNodeId": "x"},
            {"peerCanvasNodeId": "nowhere"},
        ):
            shared = agent("a", "helper", cred, persistentMemoryEnabled=True, memoryShares=[share])
            r = await c.put(
                f"/api/workflows/{wid}", json={"nodes": [n("in", "textInput", "req"), shared]}
            )
            assert r.status_code == 422, r.text
            assert "memory share" in r.text
        assert (await c.get(f"/api/workflows/{wid}")).json()["nodes"][-1]["data"].get(
            "memoryShares"
        ) is None  # nothing saved

    # someone else cannot see or change this memory: 404 as for a workflow that is not there
    async with system.client(other_key) as oc:
        assert (await oc.get(f"/api/workflows/{wid}/nodes/a/agent-memory/graph")).status_code == 404
        r = await oc.delete(f"/api/workflows/{wid}/agent-memory/nodes/{keep['id']}")
        assert r.status_code == 404
        r = await oc.post(
            f"/api/workflows/{wid}/nodes/a/agent-memory/nodes", json={"entity_name": "Evil"}
        )
        assert r.status_code == 404
    async with system.client(key) as c:
        assert "Keep" in names(await graph(c, wid, "a"))


async def test_hand_edits_go_through_the_same_events(system: System, model: ModelServer) -> None:
    user, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await create(c, [agent("a", "helper", cred, persistentMemoryEnabled=True)], [])
        base = f"/api/workflows/{wid}/nodes/a/agent-memory"
        for name in ("Ada", "Acme", "Globex"):
            r = await c.post(f"{base}/nodes", json={"entity_name": name, "confidence": 0.5})
            assert r.status_code == 201, r.text
            assert r.json()["written_by"] == {"source": "api", "user_id": user}
        r = await c.post(f"{base}/nodes", json={"entity_name": "ada"})
        assert r.status_code == 409  # names are unique, case-insensitively
        edge = {"source_entity_name": "ada", "target_entity_name": "ACME"}
        r = await c.post(f"{base}/edges", json={**edge, "relationship_type": "works for"})
        assert r.status_code == 201, r.text
        first_edge = r.json()["id"]
        r = await c.post(
            f"{base}/edges",
            json={
                "source_entity_name": "Ada",
                "target_entity_name": "Globex",
                "relationship_type": "works for",
            },
        )
        assert r.status_code == 201, r.text
        g = await graph(c, wid, "a")
        assert [x["id"] for x in g["edges"]] == [r.json()["id"]]  # single slot: replaced
        assert first_edge not in {x["id"] for x in g["edges"]}
        ada = next(x for x in g["nodes"] if x["entity_name"] == "Ada")
        r = await c.put(
            f"/api/workflows/{wid}/agent-memory/nodes/{ada['id']}",
            json={"properties": {"city": "London"}},
        )
        assert r.status_code == 200, r.text
        assert r.json()["properties"] == {"city": "London"}
        assert r.json()["confidence"] == 0.5
        r = await c.delete(f"/api/workflows/{wid}/agent-memory/nodes/{ada['id']}")
        assert r.json() == {"status": "deleted"}
        g = await graph(c, wid, "a")
        assert names(g) == {"Acme", "Globex"}
        assert g["edges"] == []  # its relationships went with it
        r = await c.delete(f"/api/workflows/{wid}/agent-memory/nodes/{ada['id']}")
        assert r.status_code == 404
    kinds = [type(env.event).__name__ for env in await memory_events(system, wid, "a")]
    assert kinds.count("MemoryEntityUpserted") == 4
    assert "MemoryRelationshipDeleted" in kinds
    assert "MemoryEntityDeleted" in kinds
