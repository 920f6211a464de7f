"""Agent memory benchmarks: one extraction's merge (fold the graph's subject, decide, append)
as a graph's history grows, and loading a graph from its events."""

from __future__ import annotations

import json
import time
import uuid

from contracts.memory import MemoryOrigin
from libs.eventlog import EventLog
from libs.memory.extraction import parse_extraction
from libs.memory.merge import merge_extraction
from libs.memory.writer import MemoryWriter
from tests.bench.harness import Figure, bench_nats, latency


def answer(i: int) -> str:
    """A typical extraction: a person, four things about them, a changing employer."""
    person = f"Person {i % 7}"
    things = [f"Topic {i}-{k}" for k in range(4)]
    return json.dumps(
        {
            "entities": [
                {"name": person, "type": "person", "properties": {"seen": i}},
                *({"name": t, "type": "topic", "properties": {"note": "x" * 80}} for t in things),
                {"name": f"Company {i % 3}", "type": "organization"},
            ],
            "relationships": [
                *({"source": person, "target": t, "type": "likes"} for t in things),
                {"source": person, "target": f"Company {i % 3}", "type": "works for"},
            ],
        }
    )


async def merges(history: int, samples: int) -> Figure:
    async with bench_nats() as nc:
        writer = MemoryWriter(EventLog(nc))
        wid = str(uuid.uuid4())

        async def merge(i: int) -> None:
            origin = MemoryOrigin(source="extraction", run_id=f"r{i}", item_id="memory-i2")
            parsed = parse_extraction(answer(i))
            await writer.change(
                wid, "agent", lambda g: merge_extraction(g, parsed, origin, f"r{i}/{wid}")
            )

        for i in range(history):
            await merge(i)
        timings = []
        for i in range(history, history + samples):
            t = time.perf_counter()
            await merge(i)
            timings.append(time.perf_counter() - t)
        t = time.perf_counter()
        graph = await writer.load(wid, "agent")
        load_s = time.perf_counter() - t
    return latency(
        f"memory merge after {history} merges",
        timings,
        history=history,
        entities=len(graph.entities),
        relationships=len(graph.relationships),
        load_ms=round(load_s * 1000, 1),
    )


async def run() -> list[Figure]:
    return [await merges(0, 50), await merges(200, 50), await merges(1000, 50)]
