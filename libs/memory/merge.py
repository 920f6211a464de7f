"""Merging an extraction into a graph (Heym §7), as the events that make the change.

Rules, in order: revoked names are deleted; an entity that matches its `similar_to` or an
existing name (case-insensitively) is updated with its properties merged over the old ones,
else created; a relationship between known entities is updated or created, and a
"single-slot" type (works for, lives in, ...) replaces earlier edges of that type from the
same source; entities left without any relationship are pruned, except the ones this
extraction named and the ones a user wrote by hand (a deliberate difference: an automated
merge never removes a person's manual entry).

Decided on a scratch copy of the graph, so each rule sees the previous rules' effect; the
caller appends the events with the graph's expected sequence, so they apply to exactly the
graph they were decided on.
"""

from __future__ import annotations

import uuid
from typing import Final

from contracts.base import Event
from contracts.memory import (
    MemoryEntityDeleted,
    MemoryEntityUpserted,
    MemoryExtractionMerged,
    MemoryOrigin,
    MemoryRelationshipDeleted,
    MemoryRelationshipUpserted,
)
from libs.memory.extraction import Extraction
from libs.memory.graph import MemoryGraph, evolve, name_key, type_key
from libs.memory.limits import (
    MAX_ENTITY_PROPERTIES_BYTES,
    MAX_GRAPH_ENTITIES,
    MAX_GRAPH_RELATIONSHIPS,
    bounded_properties,
)

SINGLE_SLOT_TYPES: Final = frozenset(
    {
        "works for",
        "works at",
        "employed at",
        "employed by",
        "manager of",
        "lives in",
        "resides in",
        "resident of",
        "based in",
        "located in",
    }
)
_IDS: Final = uuid.UUID("5b0f3c64-9a8e-4d7e-bf2a-6a1f0c0de0e1")


def stable_id(seed: str, kind: str, n: int) -> str:
    """Ids of what an extraction creates derive from its item and graph: a repeated merge of
    the same item would write the same rows, never duplicates."""
    return str(uuid.uuid5(_IDS, f"{seed}/{kind}/{n}"))


class _Merger:
    def __init__(self, graph: MemoryGraph, origin: MemoryOrigin, seed: str) -> None:
        self.scratch = graph.copy()
        self.origin = origin
        self.seed = seed
        self.events: list[Event] = []
        self.created = 0
        self.entities = 0
        self.relationships = 0
        self.deleted = 0

    def emit(self, event: Event) -> None:
        self.events.append(event)
        evolve(self.scratch, event, self.scratch.last_seq + 1)

    def new_id(self, kind: str) -> str:
        self.created += 1
        return stable_id(self.seed, kind, self.created)

    def delete_entity(self, entity_id: str, reason: str) -> None:
        self.emit(
            MemoryEntityDeleted(
                **self.scratch.key, entity_id=entity_id, reason=reason, origin=self.origin
            )
        )
        self.deleted += 1


def merge_extraction(
    graph: MemoryGraph, extraction: Extraction, origin: MemoryOrigin, seed: str
) -> list[Event]:
    m = _Merger(graph, origin, seed)
    dropped = list(extraction.dropped)
    for name in extraction.revoked:
        found = m.scratch.find(name)
        if found is not None:
            m.delete_entity(found.id, "revoked")
    named: set[str] = set()
    for ent in extraction.entities:
        named.add(name_key(ent.name))
        found = m.scratch.find(ent.similar_to) if ent.similar_to else None
        found = found or m.scratch.find(ent.name)
        if found is None and len(m.scratch.entities) >= MAX_GRAPH_ENTITIES:
            dropped.append(f"entity {ent.name!r}: the graph holds {MAX_GRAPH_ENTITIES} entities")
            continue
        props = ent.properties
        if found is not None:
            props = bounded_properties(
                {**found.properties, **ent.properties},
                MAX_ENTITY_PROPERTIES_BYTES,
                dropped,
                f"entity {ent.name!r}",
            )
            same = (found.name, found.entity_type, found.properties, found.confidence) == (
                ent.name,
                ent.entity_type,
                props,
                ent.confidence,
            )
            if same:
                continue
        m.emit(
            MemoryEntityUpserted(
                **m.scratch.key,
                entity_id=found.id if found else m.new_id("entity"),
                name=ent.name,
                entity_type=ent.entity_type,
                properties=props,
                confidence=ent.confidence,
                origin=origin,
            )
        )
        m.entities += 1
    for rel in extraction.relationships:
        source, target = m.scratch.find(rel.source), m.scratch.find(rel.target)
        if source is None or target is None:
            missing = rel.source if source is None else rel.target
            dropped.append(f"relationship {rel.source!r} -> {rel.target!r}: no {missing!r}")
            continue
        found_edge = m.scratch.edge(source.id, target.id, rel.relationship_type)
        if found_edge is None and len(m.scratch.relationships) >= MAX_GRAPH_RELATIONSHIPS:
            dropped.append(f"relationship {rel.source!r} -> {rel.target!r}: the graph is full")
            continue
        unchanged = found_edge is not None and (
            found_edge.relationship_type,
            found_edge.properties,
            found_edge.confidence,
        ) == (rel.relationship_type, rel.properties, rel.confidence)
        if not unchanged:
            m.emit(
                MemoryRelationshipUpserted(
                    **m.scratch.key,
                    relationship_id=found_edge.id if found_edge else m.new_id("relationship"),
                    source_id=source.id,
                    target_id=target.id,
                    relationship_type=rel.relationship_type,
                    properties=rel.properties,
                    confidence=rel.confidence,
                    origin=origin,
                )
            )
            m.relationships += 1
        for event in replaced_slots(m.scratch, source.id, target.id, rel.relationship_type, origin):
            m.emit(event)
            m.deleted += 1
    touched = m.scratch.touched()
    for entity in sorted(m.scratch.entities.values(), key=lambda e: (e.created_seq, e.id)):
        if entity.id in touched or name_key(entity.name) in named:
            continue
        if entity.origin.source == "api":
            continue  # a person's manual entry is theirs to remove
        m.delete_entity(entity.id, "pruned")
    m.emit(
        MemoryExtractionMerged(
            **m.scratch.key,
            origin=origin,
            entities_written=m.entities,
            relationships_written=m.relationships,
            deleted=m.deleted,
            dropped=dropped[:50],
        )
    )
    return m.events


def replaced_slots(
    graph: MemoryGraph, source_id: str, target_id: str, relationship_type: str, origin: MemoryOrigin
) -> list[Event]:
    """A single-slot relationship replaces the source's other edges of the same type."""
    key = type_key(relationship_type)
    if key not in SINGLE_SLOT_TYPES:
        return []
    return [
        MemoryRelationshipDeleted(
            **graph.key, relationship_id=r.id, reason="replaced", origin=origin
        )
        for r in sorted(graph.incident(source_id), key=lambda r: (r.created_seq, r.id))
        if r.source_id == source_id
        and r.target_id != target_id
        and type_key(r.relationship_type) == key
    ]
