"""Hand edits of a graph through the REST API, as the events that make them (pure).

The same events as extraction: a person's edit and a run's merge are one history. Edits are
checked strictly (a bad one is refused with `EditRefused`, which the gateway answers 4xx):
names and types must be non-empty and within bounds, properties an object within 16 KiB
(4 KiB for a relationship), names unique case-insensitively, endpoints existing. A new
single-slot relationship replaces the source's earlier one of that type, as in extraction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from contracts.base import Event
from contracts.memory import (
    MemoryEntityDeleted,
    MemoryEntityUpserted,
    MemoryOrigin,
    MemoryRelationshipDeleted,
    MemoryRelationshipUpserted,
)
from libs.memory.graph import MemoryGraph
from libs.memory.limits import (
    MAX_ENTITY_PROPERTIES_BYTES,
    MAX_GRAPH_ENTITIES,
    MAX_GRAPH_RELATIONSHIPS,
    MAX_KEYS,
    MAX_NAME,
    MAX_RELATIONSHIP_PROPERTIES_BYTES,
    MAX_RELATIONSHIP_TYPE,
    MAX_TYPE,
    json_size,
)
from libs.memory.merge import replaced_slots


class EditRefused(Exception):
    """An edit the graph cannot take; `status` is the HTTP status the gateway answers."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class EntityFields:
    name: str | None = None
    entity_type: str | None = None
    properties: dict[str, Any] | None = None
    confidence: float | None = None


@dataclass(frozen=True)
class RelationshipFields:
    relationship_type: str | None = None
    properties: dict[str, Any] | None = None
    confidence: float | None = None


def _text(value: Any, field: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise EditRefused(f"{field} must be a non-empty string")
    if len(value.strip()) > limit:
        raise EditRefused(f"{field} is longer than {limit} characters")
    return value.strip()


def _props(value: Any, limit: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise EditRefused("properties must be an object")
    if len(value) > MAX_KEYS:
        raise EditRefused(f"properties may have at most {MAX_KEYS} keys")
    size = json_size(value)
    if size > limit:
        raise EditRefused(f"properties take {size} bytes; at most {limit} bytes are kept")
    return dict(value)


def _confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise EditRefused("confidence must be a number between 0 and 1")
    if not 0.0 <= float(value) <= 1.0:
        raise EditRefused("confidence must be between 0 and 1")
    return float(value)


def entity_fields(body: dict[str, Any], *, partial: bool) -> EntityFields:
    def has(key: str) -> bool:
        return key in body if partial else True

    return EntityFields(
        name=_text(body.get("entity_name"), "entity_name", MAX_NAME)
        if has("entity_name")
        else None,
        entity_type=_text(body.get("entity_type", "other"), "entity_type", MAX_TYPE)
        if has("entity_type")
        else None,
        properties=_props(body.get("properties", {}), MAX_ENTITY_PROPERTIES_BYTES)
        if has("properties")
        else None,
        confidence=_confidence(body.get("confidence", 1.0)) if has("confidence") else None,
    )


def relationship_fields(body: dict[str, Any], *, partial: bool) -> RelationshipFields:
    def has(key: str) -> bool:
        return key in body if partial else True

    return RelationshipFields(
        relationship_type=_text(
            body.get("relationship_type"), "relationship_type", MAX_RELATIONSHIP_TYPE
        )
        if has("relationship_type")
        else None,
        properties=_props(body.get("properties", {}), MAX_RELATIONSHIP_PROPERTIES_BYTES)
        if has("properties")
        else None,
        confidence=_confidence(body.get("confidence", 1.0)) if has("confidence") else None,
    )


def create_entity(
    graph: MemoryGraph, f: EntityFields, origin: MemoryOrigin, entity_id: str
) -> list[Event]:
    assert f.name is not None
    assert f.entity_type is not None
    existing = graph.find(f.name)
    if existing is not None:
        raise EditRefused(f"an entity named {existing.name!r} exists ({existing.id})", 409)
    if len(graph.entities) >= MAX_GRAPH_ENTITIES:
        raise EditRefused(f"a memory graph holds at most {MAX_GRAPH_ENTITIES} entities")
    return [
        MemoryEntityUpserted(
            **graph.key,
            entity_id=entity_id,
            name=f.name,
            entity_type=f.entity_type,
            properties=f.properties or {},
            confidence=1.0 if f.confidence is None else f.confidence,
            origin=origin,
        )
    ]


def update_entity(
    graph: MemoryGraph, entity_id: str, f: EntityFields, origin: MemoryOrigin
) -> list[Event]:
    found = graph.entities.get(entity_id)
    if found is None:
        raise EditRefused("memory entity not found", 404)
    if f.name is not None:
        other = graph.find(f.name)
        if other is not None and other.id != entity_id:
            raise EditRefused(f"an entity named {other.name!r} exists ({other.id})", 409)
    return [
        MemoryEntityUpserted(
            **graph.key,
            entity_id=entity_id,
            name=f.name if f.name is not None else found.name,
            entity_type=f.entity_type if f.entity_type is not None else found.entity_type,
            properties=f.properties if f.properties is not None else found.properties,
            confidence=f.confidence if f.confidence is not None else found.confidence,
            origin=origin,
        )
    ]


def delete_entity(graph: MemoryGraph, entity_id: str, origin: MemoryOrigin) -> list[Event]:
    if entity_id not in graph.entities:
        raise EditRefused("memory entity not found", 404)
    return [MemoryEntityDeleted(**graph.key, entity_id=entity_id, reason="api", origin=origin)]


def create_relationship(
    graph: MemoryGraph,
    source_name: Any,
    target_name: Any,
    f: RelationshipFields,
    origin: MemoryOrigin,
    relationship_id: str,
) -> list[Event]:
    source = graph.find(_text(source_name, "source_entity_name", MAX_NAME))
    target = graph.find(_text(target_name, "target_entity_name", MAX_NAME))
    if source is None or target is None:
        raise EditRefused("source or target entity not found (names match case-insensitively)")
    assert f.relationship_type is not None
    if graph.edge(source.id, target.id, f.relationship_type) is not None:
        raise EditRefused("this relationship exists", 409)
    if len(graph.relationships) >= MAX_GRAPH_RELATIONSHIPS:
        raise EditRefused(f"a memory graph holds at most {MAX_GRAPH_RELATIONSHIPS} relationships")
    created = MemoryRelationshipUpserted(
        **graph.key,
        relationship_id=relationship_id,
        source_id=source.id,
        target_id=target.id,
        relationship_type=f.relationship_type,
        properties=f.properties or {},
        confidence=1.0 if f.confidence is None else f.confidence,
        origin=origin,
    )
    return [
        created,
        *replaced_slots(graph, source.id, target.id, f.relationship_type, origin),
    ]


def update_relationship(
    graph: MemoryGraph, relationship_id: str, f: RelationshipFields, origin: MemoryOrigin
) -> list[Event]:
    found = graph.relationships.get(relationship_id)
    if found is None:
        raise EditRefused("memory relationship not found", 404)
    rtype = f.relationship_type if f.relationship_type is not None else found.relationship_type
    updated = MemoryRelationshipUpserted(
        **graph.key,
        relationship_id=relationship_id,
        source_id=found.source_id,
        target_id=found.target_id,
        relationship_type=rtype,
        properties=f.properties if f.properties is not None else found.properties,
        confidence=f.confidence if f.confidence is not None else found.confidence,
        origin=origin,
    )
    others = [
        e
        for e in replaced_slots(graph, found.source_id, found.target_id, rtype, origin)
        if isinstance(e, MemoryRelationshipDeleted) and e.relationship_id != relationship_id
    ]
    return [updated, *others]


def delete_relationship(
    graph: MemoryGraph, relationship_id: str, origin: MemoryOrigin
) -> list[Event]:
    if relationship_id not in graph.relationships:
        raise EditRefused("memory relationship not found", 404)
    return [
        MemoryRelationshipDeleted(
            **graph.key, relationship_id=relationship_id, reason="api", origin=origin
        )
    ]
