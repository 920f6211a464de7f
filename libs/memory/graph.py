"""`MemoryGraph`: one agent node's knowledge graph as a fold of its memory events (`evolve`).

The fold is the authority writers decide against (the Postgres tables are a projection of
the same events): names match case-insensitively, deleting an entity removes its
relationships, and the extraction items already merged are remembered so that a redelivered
item never merges twice.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from contracts.base import Event, UnknownEvent
from contracts.memory import (
    MemoryEntityDeleted,
    MemoryEntityUpserted,
    MemoryExtractionMerged,
    MemoryOrigin,
    MemoryRelationshipDeleted,
    MemoryRelationshipUpserted,
)


def merge_key(origin: MemoryOrigin) -> str:
    """Which extraction a merge came from (work item ids repeat across runs; runs do not)."""
    return f"{origin.run_id}/{origin.item_id}"


def name_key(name: str) -> str:
    """How names compare (Heym: case-insensitively)."""
    return name.strip().casefold()


def type_key(relationship_type: str) -> str:
    """How relationship types compare: case, underscores and repeated spaces ignored."""
    return " ".join(relationship_type.replace("_", " ").casefold().split())


@dataclass
class Entity:
    id: str
    name: str
    entity_type: str
    properties: dict[str, Any]
    confidence: float
    origin: MemoryOrigin
    created_seq: int
    updated_seq: int


@dataclass
class Relationship:
    id: str
    source_id: str
    target_id: str
    relationship_type: str
    properties: dict[str, Any]
    confidence: float
    origin: MemoryOrigin
    created_seq: int
    updated_seq: int


@dataclass
class MemoryGraph:
    workflow_id: str = ""
    node_id: str = ""
    entities: dict[str, Entity] = field(default_factory=dict)
    relationships: dict[str, Relationship] = field(default_factory=dict)
    merged_items: set[str] = field(default_factory=set)
    last_seq: int = 0

    def find(self, name: str) -> Entity | None:
        """The entity with this name (case-insensitively); the oldest if several match."""
        key = name_key(name)
        if not key:
            return None
        found = [e for e in self.entities.values() if name_key(e.name) == key]
        return min(found, key=lambda e: (e.created_seq, e.id)) if found else None

    def edge(self, source_id: str, target_id: str, relationship_type: str) -> Relationship | None:
        key = type_key(relationship_type)
        for r in self.relationships.values():
            if (
                r.source_id == source_id
                and r.target_id == target_id
                and type_key(r.relationship_type) == key
            ):
                return r
        return None

    def touched(self) -> set[str]:
        """Entities with at least one relationship."""
        ids: set[str] = set()
        for r in self.relationships.values():
            ids.add(r.source_id)
            ids.add(r.target_id)
        return ids

    @property
    def key(self) -> dict[str, str]:
        """The fields that name this graph on each of its events."""
        return {"workflow_id": self.workflow_id, "node_id": self.node_id}

    def copy(self) -> MemoryGraph:
        return copy.deepcopy(self)


def evolve(graph: MemoryGraph, event: Event | UnknownEvent, sequence: int) -> None:
    """Apply one recorded memory event."""
    graph.last_seq = max(graph.last_seq, sequence)
    if isinstance(event, UnknownEvent):
        return
    if isinstance(event, MemoryEntityUpserted):
        found = graph.entities.get(event.entity_id)
        graph.entities[event.entity_id] = Entity(
            id=event.entity_id,
            name=event.name,
            entity_type=event.entity_type,
            properties=dict(event.properties),
            confidence=event.confidence,
            origin=event.origin,
            created_seq=found.created_seq if found else sequence,
            updated_seq=sequence,
        )
    elif isinstance(event, MemoryEntityDeleted):
        graph.entities.pop(event.entity_id, None)
        for rid, r in list(graph.relationships.items()):
            if event.entity_id in (r.source_id, r.target_id):
                del graph.relationships[rid]
    elif isinstance(event, MemoryRelationshipUpserted):
        if event.source_id not in graph.entities or event.target_id not in graph.entities:
            return  # writers never do this; the projection skips it the same way
        old = graph.relationships.get(event.relationship_id)
        graph.relationships[event.relationship_id] = Relationship(
            id=event.relationship_id,
            source_id=event.source_id,
            target_id=event.target_id,
            relationship_type=event.relationship_type,
            properties=dict(event.properties),
            confidence=event.confidence,
            origin=event.origin,
            created_seq=old.created_seq if old else sequence,
            updated_seq=sequence,
        )
    elif isinstance(event, MemoryRelationshipDeleted):
        graph.relationships.pop(event.relationship_id, None)
    elif isinstance(event, MemoryExtractionMerged) and event.origin.item_id:
        graph.merged_items.add(merge_key(event.origin))
    # Anything else was not written by a memory writer: a graph ignores it.
