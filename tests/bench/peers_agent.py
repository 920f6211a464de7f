"""The agent loop on LangGraph, beside Heym's: a model node calling the same scripted model
server through the `openai` client, a tool node, `AsyncPostgresSaver`, `durability="sync"`.

Measured like Heym's (`agent_bench.loop_overhead`): a run of `iterations` tool rounds minus a
run where the model answers at once, divided by the rounds; the model round trip is included.
"""

from __future__ import annotations

import json
import operator
import time
import uuid
from typing import Annotated, Any, TypedDict

import httpx

from libs.testing.model_server import ModelServer
from tests.bench.agent_bench import add_credential, agent_script, loop_overhead
from tests.bench.harness import Figure, latency
from tests.e2e.system import System

STEP_TOOL = {
    "type": "function",
    "function": {
        "name": "step",
        "description": "One step of work",
        "parameters": {"type": "object", "properties": {}},
    },
}


class AgentState(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


def _agent_graph(client: Any, tools: list[dict[str, Any]]) -> Any:
    from langgraph.graph import END, START, StateGraph

    async def model(state: AgentState) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"tools": tools} if tools else {}
        reply = await client.chat.completions.create(
            model="bench-model", messages=state["messages"], **kwargs
        )
        message = reply.choices[0].message
        out: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls
            ]
        return {"messages": [out]}

    def tool(state: AgentState) -> dict[str, Any]:
        calls = state["messages"][-1].get("tool_calls") or []
        return {
            "messages": [
                {"role": "tool", "tool_call_id": c["id"], "content": json.dumps({"ok": 1})}
                for c in calls
            ]
        }

    def route(state: AgentState) -> str:
        return "tool" if state["messages"][-1].get("tool_calls") else END

    g = StateGraph(AgentState)
    g.add_node("model", model)
    g.add_node("tool", tool)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", route, ["tool", END])
    g.add_edge("tool", "model")
    return g


async def langgraph_loop(url: str, server: ModelServer, iterations: int, runs: int) -> Figure:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-bench-0000000000", max_retries=0)
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        looped = _agent_graph(client, [STEP_TOOL]).compile(checkpointer=saver)
        plain = _agent_graph(client, []).compile(checkpointer=saver)

        async def timed(graph: Any) -> float:
            config = {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": 200}
            state = {"messages": [{"role": "user", "content": "go"}]}
            t = time.perf_counter()
            await graph.ainvoke(state, config=config, durability="sync")
            return time.perf_counter() - t

        await timed(looped)
        await timed(plain)
        samples = []
        for _ in range(runs):
            baseline = await timed(plain)
            loop = await timed(looped)
            samples.append(max(0.0, loop - baseline) / iterations)
    await client.close()
    return latency(
        "LangGraph agent loop per tool iteration (instant model)",
        samples,
        iterations=iterations,
        checkpointer="AsyncPostgresSaver",
        durability="sync",
    )


async def agent_figures(system: System, iterations: int = 20) -> tuple[Figure, Figure]:
    """(Heym's, LangGraph's) loop overhead per tool iteration, same model server and script."""
    with ModelServer(agent_script(iterations)) as server:
        _, key = await system.new_user()
        async with httpx.AsyncClient(
            base_url=system.base_url, headers={"X-MCP-Key": key}, timeout=120
        ) as c:
            cred = await add_credential(c, server)
            ours = await loop_overhead(system, c, cred, iterations)
        peer = await langgraph_loop(system.database_url, server, iterations, 10)
    return ours, peer
