"""The extraction model's answer is hostile input: malformed answers merge nothing, bad items
are dropped and named, large values are bounded."""

from __future__ import annotations

import json

import pytest

from libs.memory.extraction import MalformedExtraction, parse_extraction
from libs.memory.limits import (
    MAX_ENTITY_PROPERTIES_BYTES,
    MAX_EXTRACTED_ENTITIES,
    MAX_VALUE_CHARS,
    json_size,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '"x"', "{'a': 1}", "```\n[]\n```"])
def test_an_answer_that_is_no_json_object_is_malformed(text: str) -> None:
    with pytest.raises(MalformedExtraction):
        parse_extraction(text)


def test_a_fenced_answer_is_read() -> None:
    got = parse_extraction('```json\n{"entities": [{"name": "Ada"}]}\n```')
    assert [e.name for e in got.entities] == ["Ada"]


def test_malformed_items_are_dropped_and_the_rest_kept() -> None:
    got = parse_extraction(
        json.dumps(
            {
                "revoked_entities": ["x", 3, ""],
                "entities": [
                    "Ada",
                    {"type": "person"},
                    {"name": "Bob", "confidence": "high", "properties": [1]},
                    {"name": "Cy", "confidence": 7},
                ],
                "relationships": [{"source": "Bob"}, {"source": "Bob", "target": "Cy"}],
            }
        )
    )
    assert got.revoked == ["x"]
    assert [(e.name, e.confidence, e.properties) for e in got.entities] == [
        ("Bob", 0.0, {}),
        ("Cy", 1.0, {}),
    ]
    assert [(r.source, r.target, r.relationship_type) for r in got.relationships] == [
        ("Bob", "Cy", "related")
    ]
    assert len(got.dropped) == 4


def test_a_one_megabyte_property_is_bounded() -> None:
    huge = "x" * 1_000_000
    got = parse_extraction(
        json.dumps(
            {
                "entities": [
                    {
                        "name": "Ada",
                        "properties": {"bio": huge, "nested": {"k": huge}, "city": "London"},
                    }
                ]
            }
        )
    )
    (ada,) = got.entities
    assert ada.properties["city"] == "London"
    assert len(ada.properties["bio"]) == MAX_VALUE_CHARS
    assert "nested" not in ada.properties
    assert json_size(ada.properties) <= MAX_ENTITY_PROPERTIES_BYTES
    assert any("bio" in d for d in got.dropped)


def test_many_properties_stay_within_the_byte_bound() -> None:
    props = {f"k{i}": "v" * 1500 for i in range(90)}
    got = parse_extraction(json.dumps({"entities": [{"name": "Ada", "properties": props}]}))
    assert json_size(got.entities[0].properties) <= MAX_ENTITY_PROPERTIES_BYTES


def test_at_most_so_many_entities_are_read() -> None:
    many = [{"name": f"e{i}"} for i in range(MAX_EXTRACTED_ENTITIES + 50)]
    got = parse_extraction(json.dumps({"entities": many}))
    assert len(got.entities) == MAX_EXTRACTED_ENTITIES


def test_a_huge_answer_is_recorded_in_its_bounded_form_and_still_merges() -> None:
    from services.agent_runtime.memory.extraction import MAX_REPLY_BYTES, recordable

    answer = json.dumps(
        {
            "entities": [
                {"name": "Zed", "properties": {"bio": "x" * 1_000_000, "age": 3}},
                {"name": "Zoo"},
            ],
            "relationships": [{"source": "Zed", "target": "Zoo", "type": "visits"}],
        }
    )
    kept = recordable(answer)
    assert len(kept.encode()) < MAX_REPLY_BYTES
    again = parse_extraction(kept)
    assert [e.name for e in again.entities] == ["Zed", "Zoo"]
    assert again.entities[0].properties["age"] == 3
    assert any("bio" in d for d in again.dropped)
    assert len(again.relationships) == 1
    garbage = "y" * (MAX_REPLY_BYTES * 2)
    assert len(recordable(garbage).encode()) == MAX_REPLY_BYTES
    assert recordable("small") == "small"


def test_all_properties_of_one_answer_share_a_budget() -> None:
    many = [{"name": f"e{i}", "properties": {"v": "z" * 1900}} for i in range(150)]
    many += [
        {"name": f"f{i}", "properties": {f"k{j}": "z" * 1900 for j in range(8)}} for i in range(60)
    ]
    got = parse_extraction(json.dumps({"entities": many}))
    total = sum(json_size(e.properties) for e in got.entities)
    assert total <= 1024 * 1024
    assert len(got.entities) == MAX_EXTRACTED_ENTITIES  # entities kept, properties dropped
