"""`task bench:peers`: the same workflow shapes on Heym, LangGraph (Postgres checkpointer,
`durability="sync"`) and DBOS Transact, against the same Postgres, in one run, with ratios;
and the agent loop on Heym and LangGraph against the same scripted model server.

The peers are an optional extra (`pip install -e .[peers]`), never a dependency of the services.
"""

from __future__ import annotations

import asyncio
import operator
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict

from libs.eventlog import EventLog
from libs.testing.infra import connected
from tests.bench.harness import Figure, latency, rate
from tests.bench.peers_agent import agent_figures
from tests.bench.workflow_bench import chain, fan_out, run_once, running_system

RUNS = 20


class ChainState(TypedDict):
    v: int


class FanState(TypedDict):
    results: Annotated[list[int], operator.add]


def _lg_chain(n: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(ChainState)
    prev = START
    for i in range(n):
        g.add_node(f"s{i}", lambda s: {"v": s["v"] + 1})
        g.add_edge(prev, f"s{i}")
        prev = f"s{i}"
    g.add_edge(prev, END)
    return g


def _lg_fan(width: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(FanState)
    g.add_node("start", lambda s: {"results": []})
    g.add_edge(START, "start")
    for i in range(width):
        g.add_node(f"b{i}", lambda s, i=i: {"results": [i]})
        g.add_edge("start", f"b{i}")
    g.add_node("join", lambda s: {"results": []})
    g.add_edge([f"b{i}" for i in range(width)], "join")
    g.add_edge("join", END)
    return g


async def _samples(fn: Callable[[], Awaitable[Any]], runs: int) -> list[float]:
    for _ in range(3):
        await fn()
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t)
    return out


async def langgraph_figures(url: str) -> dict[str, Figure]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    figures: dict[str, Figure] = {}
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        shapes = {
            "chain50": (_lg_chain(50), 50),
            "fan20": (_lg_fan(20), 22),
            "three": (_lg_chain(3), 3),
            "ten": (_lg_chain(10), 10),
        }
        compiled = {k: (g.compile(checkpointer=saver), n) for k, (g, n) in shapes.items()}

        def invoke(key: str) -> Callable[[], Awaitable[Any]]:
            graph, _ = compiled[key]
            state: dict[str, Any] = {"v": 0} if key != "fan20" else {"results": []}

            async def go() -> Any:
                config = {"configurable": {"thread_id": uuid.uuid4().hex}}
                return await graph.ainvoke(state, config=config, durability="sync")

            return go

        for key in ("chain50", "fan20", "three"):
            n = compiled[key][1]
            samples = await _samples(invoke(key), RUNS)
            figures[key] = latency(
                f"LangGraph {key}", [s / (n if key != "three" else 1) for s in samples]
            )
        go = invoke("ten")
        sem = asyncio.Semaphore(50)

        async def one() -> None:
            async with sem:
                await go()

        t = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(200)))
        figures["ten"] = rate(
            "LangGraph 10-node throughput", 200, time.perf_counter() - t, unit="runs/s"
        )
    return figures


async def dbos_figures(url: str) -> dict[str, Figure]:
    from dbos import DBOS

    DBOS(
        config={"name": "heym_bench", "system_database_url": url.replace("/heym?", "/dbos_bench?")}
    )

    @DBOS.step()
    async def step(v: int) -> int:
        return v + 1

    @DBOS.workflow()
    async def chain_wf(n: int) -> int:
        v = 0
        for _ in range(n):
            v = await step(v)
        return v

    @DBOS.workflow()
    async def fan_wf(width: int) -> int:
        results = await asyncio.gather(*(step(i) for i in range(width)))
        return sum(results)

    DBOS.launch()
    figures: dict[str, Figure] = {}
    try:
        for key, fn, n in (
            ("chain50", lambda: chain_wf(50), 50),
            ("fan20", lambda: fan_wf(20), 22),
            ("three", lambda: chain_wf(3), 1),
        ):
            samples = await _samples(fn, RUNS)
            figures[key] = latency(f"DBOS {key}", [s / n for s in samples])
        sem = asyncio.Semaphore(50)

        async def one() -> None:
            async with sem:
                await chain_wf(10)

        t = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(200)))
        figures["ten"] = rate(
            "DBOS 10-node throughput", 200, time.perf_counter() - t, unit="runs/s"
        )
    finally:
        DBOS.destroy()
    return figures


async def run() -> list[Figure]:
    ours: dict[str, Figure] = {}
    async with running_system() as system, connected(system.nats_url) as nc:
        log = EventLog(nc)
        for key, graph, n in (
            ("chain50", chain("set", 49), 50),
            ("fan20", fan_out(20), 22),
            ("three", chain("set", 2), 1),
        ):
            samples = await _samples(lambda g=graph: run_once(log, *g), RUNS)
            ours[key] = latency(f"Heym {key}", [s / n for s in samples])
        sem = asyncio.Semaphore(50)
        ten = chain("set", 9)

        async def one() -> None:
            async with sem:
                await run_once(log, *ten)

        t = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(200)))
        ours["ten"] = rate("Heym 10-node throughput", 200, time.perf_counter() - t, unit="runs/s")
        url = system.database_url
        ours["agent"], lg_agent = await agent_figures(system)
        lg = await langgraph_figures(url)
        lg["agent"] = lg_agent
        peers = {"LangGraph": lg, "DBOS": await dbos_figures(url)}
    figures = list(ours.values())
    for name, figs in peers.items():
        for key, fig in figs.items():
            mine = ours[key]
            if fig.unit == "runs/s":
                fig.params["heym_over_peer"] = round((mine.value or 0) / (fig.value or 1), 2)
            else:
                fig.params["peer_over_heym_p50"] = round((fig.p50 or 0) / (mine.p50 or 1), 2)
            fig.params["peer"] = name
            figures.append(fig)
    return figures
