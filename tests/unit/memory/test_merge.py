"""Extraction merge rules (Heym §7) on the graph fold: given a graph, when an extraction
merges, then these events and this graph."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.base import Event
from contracts.memory import (
    MemoryEntityDeleted,
    MemoryExtractionMerged,
    MemoryOrigin,
    MemoryRelationshipDeleted,
)
from libs.memory.extraction import parse_extraction
from libs.memory.graph import MemoryGraph, evolve
from libs.memory.merge import merge_extraction

pytestmark = pytest.mark.unit

ORIGIN = MemoryOrigin(source="extraction", run_id="r1", invocation_id="i1", item_id="memory-i1")


def merged(graph: MemoryGraph, answer: dict[str, Any], item: str = "memory-i1") -> list[Event]:
    origin = MemoryOrigin(source="extraction", run_id="r", invocation_id="i", item_id=item)
    events = merge_extraction(graph, parse_extraction(_json(answer)), origin, f"{item}/w/n")
    for e in events:
        evolve(graph, e, graph.last_seq + 1)
    return events


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def names(graph: MemoryGraph) -> set[str]:
    return {e.name for e in graph.entities.values()}


def edges(graph: MemoryGraph) -> set[tuple[str, str, str]]:
    by_id = {e.id: e.name for e in graph.entities.values()}
    return {
        (by_id[r.source_id], r.relationship_type, by_id[r.target_id])
        for r in graph.relationships.values()
    }


def fact(*rels: tuple[str, str, str], **types: str) -> dict[str, Any]:
    ents = {n for s, _, t in rels for n in (s, t)}
    return {
        "entities": [{"name": n, "type": types.get(n, "other")} for n in sorted(ents)],
        "relationships": [{"source": s, "type": t, "target": d} for s, t, d in rels],
    }


def test_entities_and_a_relationship_are_created_and_marked_merged() -> None:
    g = MemoryGraph(workflow_id="w", node_id="n")
    events = merged(g, fact(("Ada", "works for", "Acme"), Ada="person"))
    assert names(g) == {"Ada", "Acme"}
    assert edges(g) == {("Ada", "works for", "Acme")}
    assert isinstance(events[-1], MemoryExtractionMerged)
    assert g.merged_items == {"r/memory-i1"}
    assert all(getattr(e, "workflow_id", None) == "w" for e in events)


def test_names_match_case_insensitively_and_properties_merge_over_old_ones() -> None:
    g = MemoryGraph()
    merged(g, {"entities": [{"name": "Ada", "type": "person", "properties": {"a": 1, "b": 1}}]})
    merged(
        g,
        {"entities": [{"name": "ADA", "type": "person", "properties": {"b": 2, "c": 3}}]},
        item="memory-i2",
    )
    (ada,) = g.entities.values()
    assert ada.name == "ADA"
    assert ada.properties == {"a": 1, "b": 2, "c": 3}


def test_similar_to_updates_the_named_entity() -> None:
    g = MemoryGraph()
    merged(g, fact(("Ada Lovelace", "likes", "tea")))
    merged(
        g,
        {
            "entities": [{"name": "Ada L.", "similar_to": "ada lovelace", "type": "person"}],
            "relationships": [{"source": "Ada L.", "target": "tea", "type": "likes"}],
        },
        item="memory-i2",
    )
    assert names(g) == {"Ada L.", "tea"}
    assert edges(g) == {("Ada L.", "likes", "tea")}


def test_revoked_entities_are_deleted_with_their_relationships() -> None:
    g = MemoryGraph()
    merged(g, fact(("Ada", "likes", "Strawberry ice cream"), ("Ada", "likes", "tea")))
    events = merged(g, {"revoked_entities": ["strawberry ICE cream"]}, item="memory-i2")
    assert names(g) == {"Ada", "tea"}
    assert edges(g) == {("Ada", "likes", "tea")}
    assert any(isinstance(e, MemoryEntityDeleted) and e.reason == "revoked" for e in events)


def test_a_single_slot_relationship_replaces_the_earlier_one_of_its_type() -> None:
    g = MemoryGraph()
    merged(g, fact(("Ada", "works for", "Acme"), ("Ada", "likes", "tea")))
    events = merged(g, fact(("Ada", "works_for", "Globex")), item="memory-i2")
    assert edges(g) == {("Ada", "works_for", "Globex"), ("Ada", "likes", "tea")}
    assert any(isinstance(e, MemoryRelationshipDeleted) and e.reason == "replaced" for e in events)
    # Acme lost its only relationship and was not named this time: pruned
    assert names(g) == {"Ada", "Globex", "tea"}


def test_other_relationship_types_accumulate() -> None:
    g = MemoryGraph()
    merged(g, fact(("Ada", "likes", "tea")))
    merged(g, fact(("Ada", "likes", "coffee")), item="memory-i2")
    assert edges(g) == {("Ada", "likes", "tea"), ("Ada", "likes", "coffee")}


def test_isolated_entities_are_pruned_but_not_the_ones_just_named_or_written_by_hand() -> None:
    g = MemoryGraph()
    merged(g, {"entities": [{"name": "Loner"}]})
    assert names(g) == {"Loner"}  # named by this extraction: kept until a later merge
    from contracts.memory import MemoryEntityUpserted

    evolve(
        g,
        MemoryEntityUpserted(
            workflow_id="",
            node_id="",
            entity_id="manual",
            name="Manual note",
            entity_type="other",
            origin=MemoryOrigin(source="api", user_id="u"),
        ),
        g.last_seq + 1,
    )
    merged(g, fact(("Ada", "likes", "tea")), item="memory-i2")
    assert names(g) == {"Ada", "tea", "Manual note"}


def test_nothing_to_remember_changes_nothing_but_marks_the_item() -> None:
    g = MemoryGraph()
    merged(g, fact(("Ada", "likes", "tea")))
    before = (dict(g.entities), dict(g.relationships))
    events = merged(g, fact(("Ada", "likes", "tea")), item="memory-i2")
    assert [type(e) for e in events] == [MemoryExtractionMerged]
    assert (dict(g.entities), dict(g.relationships)) == before


def test_a_relationship_to_an_unknown_entity_is_dropped_and_said() -> None:
    g = MemoryGraph()
    events = merged(
        g,
        {
            "entities": [{"name": "Ada"}],
            "relationships": [{"source": "Ada", "target": "Nobody", "type": "knows"}],
        },
    )
    assert edges(g) == set()
    end = events[-1]
    assert isinstance(end, MemoryExtractionMerged)
    assert any("Nobody" in d for d in end.dropped)


def test_ids_derive_from_the_item_and_graph_so_a_repeat_writes_the_same_rows() -> None:
    a, b = MemoryGraph(), MemoryGraph()
    ea = merged(a, fact(("Ada", "likes", "tea")))
    eb = merged(b, fact(("Ada", "likes", "tea")))
    assert ea == eb
