"""`POST /api/expressions/evaluate` answers as Heym's editor preview does (§3.5)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.e2e.system import System

pytestmark = pytest.mark.e2e


def n(nid: str, ntype: str, label: str, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label, **data},
    }


def e(source: str, target: str, handle: str | None = None) -> dict[str, Any]:
    edge: dict[str, Any] = {"id": f"{source}-{target}", "source": source, "target": target}
    if handle:
        edge["sourceHandle"] = handle
    return edge


@pytest.fixture
async def client(system: System) -> AsyncIterator[httpx.AsyncClient]:
    _, key = await system.new_user()
    async with system.client(key) as c:
        yield c


async def workflow(c: httpx.AsyncClient, nodes: list[Any], edges: list[Any]) -> str:
    r = await c.post(
        "/api/workflows", json={"name": f"p-{uuid.uuid4().hex[:6]}", "nodes": nodes, "edges": edges}
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def preview(c: httpx.AsyncClient, expression: str, **body: Any) -> dict[str, Any]:
    r = await c.post("/api/expressions/evaluate", json={"expression": expression, **body})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def basic(c: httpx.AsyncClient) -> str:
    return await workflow(
        c,
        [
            n("in", "textInput", "userInput"),
            n("s", "set", "shape", mappings=[{"key": "upper", "value": "$userInput.text.upper()"}]),
            n("o", "output", "out"),
        ],
        [e("in", "s"), e("s", "o")],
    )


async def test_preserved_type_is_true_for_any_whole_expression(client: httpx.AsyncClient) -> None:
    wid = await basic(client)
    results = [{"node_id": "in", "label": "userInput", "output": {"text": "hi"}}]
    at = {"workflow_id": wid, "current_node_id": "s", "node_results": results}
    r = await preview(client, "$userInput.text", **at)
    assert (r["result"], r["result_type"], r["preserved_type"]) == ("hi", "string", True)
    r = await preview(client, '$now.format("YYYY")', **at)
    assert (r["result_type"], r["preserved_type"]) == ("string", True)
    r = await preview(client, "Hello $userInput.text", **at)
    assert (r["result"], r["preserved_type"]) == ("Hello hi", False)


async def test_invalid_expressions_answer_an_error(client: httpx.AsyncClient) -> None:
    r = await preview(client, "$@@invalid@@")
    assert r["result"] is None
    assert r["error"]


async def test_a_line_that_is_a_whole_expression_is_evaluated_whole(
    client: httpx.AsyncClient,
) -> None:
    wid = await basic(client)
    results = [{"node_id": "in", "label": "userInput", "output": {"text": "hi"}}]
    text = 'Says: $userInput.text\n$Date().day < 32 ? "yes" : "no"\n$userInput.text.length + 1'
    r = await preview(client, text, workflow_id=wid, current_node_id="s", node_results=results)
    assert r["result"] == "Says: hi\nyes\n3"
    assert r["preserved_type"] is False


async def test_input_body_is_the_text_inputs_preview_and_no_container_method_leaks(
    client: httpx.AsyncClient,
) -> None:
    wid = await basic(client)
    at = {"workflow_id": wid, "current_node_id": "s"}
    body = {"body": {"items": [1, 2], "text": "yo"}}
    assert (await preview(client, "$input.items", input_body=body, **at))["result"] == [1, 2]
    assert (await preview(client, "$userInput.text", input_body=body, **at))["result"] == "yo"
    assert (await preview(client, "$userInput.body.text", input_body=body, **at))["result"] == "yo"
    plain = {"body": {"text": "no items here"}}
    for name in ("items", "keys", "values", "get", "pop", "copy", "update", "setdefault"):
        r = await preview(client, f"$input.{name}", input_body=plain, **at)
        assert r["result"] is None, (name, r)
        r = await preview(client, f"$userInput.{name}", input_body=plain, **at)
        assert r["result"] is None, (name, r)
    results = [{"node_id": "in", "label": "userInput", "output": {"tags": ["a"]}}]
    for name in ("append", "copy", "count", "index", "pop", "sort", "reverse", "clear"):
        r = await preview(
            client,
            f"$userInput.tags.{name}",
            workflow_id=wid,
            current_node_id="s",
            node_results=results,
        )
        assert r["result"] is None, (name, r)
    # called explicitly, the language's own methods still work
    r = await preview(client, "$userInput.keys()", input_body=plain, **at)
    assert r["result"] == ["text", "headers", "query", "body"]


async def test_loop_preview_and_set_nodes_derived_from_their_mappings(
    client: httpx.AsyncClient,
) -> None:
    wid = await workflow(
        client,
        [
            n("in", "textInput", "userInput"),
            n(
                "s",
                "set",
                "prep",
                mappings=[{"key": "list", "value": "$userInput.names.map('item.upper()')"}],
            ),
            n("l", "loop", "each", arrayExpression="$prep.list"),
            n("b", "set", "body", mappings=[{"key": "x", "value": "$each.item"}]),
        ],
        [
            e("in", "s"),
            e("s", "l"),
            e("l", "b", "loop"),
            {"id": "back", "source": "b", "target": "l", "targetHandle": "loop"},
        ],
    )
    body = {"body": {"names": ["ann", "bob", "cid"]}}
    at = {"workflow_id": wid, "current_node_id": "b", "input_body": body}
    r = await preview(client, "$prep.list", **at)
    assert r["result"] == ["ANN", "BOB", "CID"]
    r = await preview(client, "$each.item", **at, selected_loop_iteration_index=1)
    assert (r["result"], r["selected_loop_total"]) == ("BOB", 3)
    r = await preview(client, "$each.index", **at)
    assert (r["result"], r["selected_loop_total"]) == (0, 3)


async def test_vars_are_built_from_the_workflows_variable_nodes(
    client: httpx.AsyncClient,
) -> None:
    wid = await workflow(
        client,
        [
            n("in", "textInput", "userInput"),
            n("v", "variable", "setName", variableName="who", variableValue="$userInput.text"),
            n(
                "w",
                "variable",
                "setCount",
                variableName="count",
                variableValue="2",
                variableType="number",
            ),
            n("o", "output", "out"),
        ],
        [e("in", "v"), e("v", "w"), e("w", "o")],
    )
    at = {"workflow_id": wid, "current_node_id": "o", "input_body": {"body": {"text": "Ada"}}}
    assert (await preview(client, "$vars.who", **at))["result"] == "Ada"
    assert (await preview(client, "$vars.count + 1", **at))["result"] == 3
    assert (await preview(client, "$global.who", **at))["result"] == "Ada"
