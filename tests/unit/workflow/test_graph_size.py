"""Issue #7 item 8: graph analysis is linear and workflows have a documented size limit."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from libs.workflow import MAX_NODES, Graph, validate_workflow

pytestmark = pytest.mark.unit


def chain(count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [{"id": "in", "type": "textInput", "data": {"label": "start"}}]
    edges = []
    for i in range(count - 1):
        source = f"n{i - 1}" if i else "in"
        nodes.append({"id": f"n{i}", "type": "set", "data": {"label": f"s{i}", "mappings": []}})
        edges.append({"id": f"e{i}", "source": source, "target": f"n{i}"})
    return nodes, edges


def test_a_workflow_over_the_node_limit_is_refused_by_name() -> None:
    nodes, edges = chain(5_000)  # about 1 MB of JSON, under the 4 MB body limit
    [issue] = validate_workflow(nodes, edges)
    assert issue.code == "too_large"
    assert f"at most {MAX_NODES} nodes" in issue.message


def test_validating_the_largest_allowed_chain_holds_no_quadratic_state() -> None:
    nodes, edges = chain(MAX_NODES)
    tracemalloc.start()
    try:
        assert validate_workflow(nodes, edges) == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Every node's ancestor set held at once was ~23 MB at 1,000 nodes (570 MB at 5,000).
    assert peak < 8 * 1024 * 1024


def test_ancestors_and_loop_bodies_are_answered_on_demand() -> None:
    nodes = [
        {"id": i, "type": t, "data": {"label": i}}
        for i, t in [("a", "textInput"), ("b", "set"), ("c", "set"), ("d", "merge")]
    ] + [
        {"id": "l", "type": "loop", "data": {"label": "l"}},
        {"id": "x", "type": "set", "data": {"label": "x"}},
    ]
    edges = [
        {"id": "1", "source": "a", "target": "b"},
        {"id": "2", "source": "a", "target": "c"},
        {"id": "3", "source": "b", "target": "d"},
        {"id": "4", "source": "c", "target": "d"},
        {"id": "5", "source": "d", "target": "l"},
        {"id": "6", "source": "l", "target": "x", "sourceHandle": "loop"},
        {"id": "7", "source": "x", "target": "l", "targetHandle": "loop"},
    ]
    graph = Graph(nodes, edges)
    assert graph.ancestors["d"] == {"a", "b", "c"}
    assert graph.ancestors["a"] == frozenset()
    assert graph.ancestors["x"] == {"a", "b", "c", "d", "l"}
    assert graph.loop_bodies["l"] == {"x"}
    assert set(graph.loop_bodies) == {"l"}
    assert graph.reachable(["b"]) == {"b", "d", "l", "x"}
    with pytest.raises(KeyError):
        graph.ancestors["nope"]


def test_ancestors_asked_down_a_chain_build_on_the_kept_answers() -> None:
    nodes, edges = chain(200)  # more than the answers kept: the cache is cleared on the way
    graph = Graph(nodes, edges)
    ids = [n["id"] for n in nodes]
    for i, nid in enumerate(ids):
        assert graph.ancestors[nid] == frozenset(ids[:i]), nid
    # asked out of order, the walk gives the same answers
    fresh = Graph(nodes, edges)
    assert fresh.ancestors[ids[150]] == frozenset(ids[:150])
