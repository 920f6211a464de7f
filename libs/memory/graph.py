"""`MemoryGraph`: one agent node's knowledge graph as a fold of its memory events (`evolve`).

The fold is the authority writers decide against (the Postgres tables are a projection of
the same events): names match case-insensitively, deleting an entity removes its
relationships, and the extraction items already merged are remembered so that a redelivered
item never merges twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contracts.base import Event, UnknownEvent
from contracts.memory import (
    MemoryEntityDeleted,
    MemoryEntityUpserted,
    MemoryExtractionMerged,
    MemoryGraphErased,
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


@dataclass(frozen=True)
class Entity:
    id: str
    name: str
    entity_type: str
    properties: dict[str, Any]
    confidence: float
    origin: MemoryOrigin
    created_seq: int
    updated_seq: int


@dataclass(frozen=True)
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

    @property
    def slot(self) -> tuple[str, str, str]:
        return (self.source_id, self.target_id, type_key(self.relationship_type))


@dataclass
class MemoryGraph:
    """Entities and relationships are replaced, never changed in place, so a copy shares them;
    the indexes (by name, by endpoints and type, by entity) keep every lookup O(1)."""

    workflow_id: str = ""
    node_id: str = ""
    entities: dict[str, Entity] = field(default_factory=dict)
    relationships: dict[str, Relationship] = field(default_factory=dict)
    merged_items: set[str] = field(default_factory=set)
    last_seq: int = 0
    erased: bool = False  # `memory.graph_erased`: nothing is written to it any more
    _by_name: dict[str, set[str]] = field(default_factory=dict, repr=False)
    _by_slot: dict[tuple[str, str, str], str] = field(default_factory=dict, repr=False)
    _incident: dict[str, set[str]] = field(default_factory=dict, repr=False)

    def find(self, name: str) -> Entity | None:
        """The entity with this name (case-insensitively); the oldest if several match."""
        ids = self._by_name.get(name_key(name))
        if not ids:
            return None
        return min((self.entities[i] for i in ids), key=lambda e: (e.created_seq, e.id))

    def edge(self, source_id: str, target_id: str, relationship_type: str) -> Relationship | None:
        rid = self._by_slot.get((source_id, target_id, type_key(relationship_type)))
        return self.relationships.get(rid) if rid is not None else None

    def incident(self, entity_id: str) -> list[Relationship]:
        """The relationships from or to an entity."""
        return [self.relationships[r] for r in self._incident.get(entity_id, ())]

    def touched(self) -> set[str]:
        """Entities with at least one relationship."""
        return {e for e, rels in self._incident.items() if rels}

    @property
    def key(self) -> dict[str, str]:
        """The fields that name this graph on each of its events."""
        return {"workflow_id": self.workflow_id, "node_id": self.node_id}

    def copy(self) -> MemoryGraph:
        return MemoryGraph(
            workflow_id=self.workflow_id,
            node_id=self.node_id,
            entities=dict(self.entities),
            relationships=dict(self.relationships),
            merged_items=set(self.merged_items),
            last_seq=self.last_seq,
            _by_name={k: set(v) for k, v in self._by_name.items()},
            _by_slot=dict(self._by_slot),
            _incident={k: set(v) for k, v in self._incident.items()},
        )

    def _put_entity(self, entity: Entity) -> None:
        old = self.entities.get(entity.id)
        if old is not None:
            self._by_name.get(name_key(old.name), set()).discard(old.id)
        self.entities[entity.id] = entity
        self._by_name.setdefault(name_key(entity.name), set()).add(entity.id)

    def _drop_entity(self, entity_id: str) -> None:
        old = self.entities.pop(entity_id, None)
        if old is None:
            return
        self._by_name.get(name_key(old.name), set()).discard(entity_id)
        for rid in list(self._incident.get(entity_id, ())):
            self._drop_relationship(rid)
        self._incident.pop(entity_id, None)

    def _put_relationship(self, rel: Relationship) -> None:
        self._drop_relationship(rel.id)
        self.relationships[rel.id] = rel
        self._by_slot[rel.slot] = rel.id
        self._incident.setdefault(rel.source_id, set()).add(rel.id)
        self._incident.setdefault(rel.target_id, set()).add(rel.id)

    def _drop_relationship(self, relationship_id: str) -> None:
        old = self.relationships.pop(relationship_id, None)
        if old is None:
            return
        if self._by_slot.get(old.slot) == relationship_id:
            del self._by_slot[old.slot]
        self._incident.get(old.source_id, set()).discard(relationship_id)
        self._incident.get(old.target_id, set()).discard(relationship_id)


def evolve(graph: MemoryGraph, event: Event | UnknownEvent, sequence: int) -> None:
    """Apply one recorded memory event."""
    graph.last_seq = max(graph.last_seq, sequence)
    if isinstance(event, UnknownEvent):
        return
    if isinstance(event, MemoryEntityUpserted):
        found = graph.entities.get(event.entity_id)
        graph._put_entity(
            Entity(
                id=event.entity_id,
                name=event.name,
                entity_type=event.entity_type,
                properties=dict(event.properties),
                confidence=event.confidence,
                origin=event.origin,
                created_seq=found.created_seq if found else sequence,
                updated_seq=sequence,
            )
        )
    elif isinstance(event, MemoryEntityDeleted):
        graph._drop_entity(event.entity_id)
    elif isinstance(event, MemoryRelationshipUpserted):
        if event.source_id not in graph.entities or event.target_id not in graph.entities:
            return  # writers never do this; the projection skips it the same way
        old = graph.relationships.get(event.relationship_id)
        graph._put_relationship(
            Relationship(
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
        )
    elif isinstance(event, MemoryRelationshipDeleted):
        graph._drop_relationship(event.relationship_id)
    elif isinstance(event, MemoryExtractionMerged) and event.origin.item_id:
        graph.merged_items.add(merge_key(event.origin))
    elif isinstance(event, MemoryGraphErased):
        for entity_id in list(graph.entities):
            graph._drop_entity(entity_id)
        graph.merged_items.clear()
        graph.erased = True
    # Anything else was not written by a memory writer: a graph ignores it.
