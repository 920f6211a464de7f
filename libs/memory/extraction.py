"""Reading an extraction model's answer (Heym §7): `{revoked_entities, entities[{name, type,
properties, confidence, similar_to}], relationships[{source, target, type, properties,
confidence}]}`, optionally in a Markdown code fence.

The answer is the model's, so it is hostile input: an answer that is no JSON object is
`MalformedExtraction` (nothing merges); malformed items are skipped and over-large ones
bounded, each named in `dropped`, and the rest merges.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from libs.memory.limits import (
    MAX_ENTITY_PROPERTIES_BYTES,
    MAX_EXTRACTED_ENTITIES,
    MAX_EXTRACTED_RELATIONSHIPS,
    MAX_EXTRACTION_PROPERTIES_BYTES,
    MAX_NAME,
    MAX_RELATIONSHIP_PROPERTIES_BYTES,
    MAX_RELATIONSHIP_TYPE,
    MAX_REVOKED,
    MAX_TYPE,
    bounded_properties,
    clean_text,
    confidence,
    json_size,
)


class MalformedExtraction(ValueError):
    """The model's answer is not a JSON object."""


@dataclass(frozen=True)
class ExtractedEntity:
    name: str
    entity_type: str
    properties: dict[str, Any]
    confidence: float
    similar_to: str | None = None


@dataclass(frozen=True)
class ExtractedRelationship:
    source: str
    target: str
    relationship_type: str
    properties: dict[str, Any]
    confidence: float


@dataclass
class Extraction:
    revoked: list[str] = field(default_factory=list)
    entities: list[ExtractedEntity] = field(default_factory=list)
    relationships: list[ExtractedRelationship] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """The bounded answer in the answer's own shape (recorded instead of a huge one)."""
        return json.dumps(
            {
                "revoked_entities": self.revoked,
                "entities": [
                    {
                        "name": e.name,
                        "type": e.entity_type,
                        "properties": e.properties,
                        "confidence": e.confidence,
                        "similar_to": e.similar_to,
                    }
                    for e in self.entities
                ],
                "relationships": [
                    {
                        "source": r.source,
                        "target": r.target,
                        "type": r.relationship_type,
                        "properties": r.properties,
                        "confidence": r.confidence,
                    }
                    for r in self.relationships
                ],
                "dropped": self.dropped,
            },
            ensure_ascii=False,
        )


def parse_extraction(text: str) -> Extraction:
    data = _json_object(text)
    out = Extraction()
    revoked = data.get("revoked_entities")
    if isinstance(revoked, list):
        names = [clean_text(x, MAX_NAME) for x in revoked if isinstance(x, str)]
        out.revoked = [n for n in names if n][:MAX_REVOKED]
    entities = data.get("entities")
    if entities is not None and not isinstance(entities, list):
        out.dropped.append("entities is not a list")
    for i, raw in enumerate(entities if isinstance(entities, list) else []):
        if i >= MAX_EXTRACTED_ENTITIES:
            out.dropped.append(f"entities past the first {MAX_EXTRACTED_ENTITIES}")
            break
        entity = _entity(raw, i, out.dropped)
        if entity is not None:
            out.entities.append(entity)
    _budget(out)
    relationships = data.get("relationships")
    if relationships is not None and not isinstance(relationships, list):
        out.dropped.append("relationships is not a list")
    for i, raw in enumerate(relationships if isinstance(relationships, list) else []):
        if i >= MAX_EXTRACTED_RELATIONSHIPS:
            out.dropped.append(f"relationships past the first {MAX_EXTRACTED_RELATIONSHIPS}")
            break
        relationship = _relationship(raw, i, out.dropped)
        if relationship is not None:
            out.relationships.append(relationship)
    out.dropped.extend(str(d) for d in (data.get("dropped") or [])[:50] if isinstance(d, str))
    return out


def _budget(out: Extraction) -> None:
    """All entities' properties within `MAX_EXTRACTION_PROPERTIES_BYTES`: later ones lose
    theirs (relationship properties are bounded per item, 400 x 4 KiB at most)."""
    used = 0
    for i, e in enumerate(out.entities):
        size = json_size(e.properties)
        if used + size > MAX_EXTRACTION_PROPERTIES_BYTES:
            out.entities[i] = ExtractedEntity(
                name=e.name,
                entity_type=e.entity_type,
                properties={},
                confidence=e.confidence,
                similar_to=e.similar_to,
            )
            out.dropped.append(f"entity {e.name!r}: properties left out (answer too large)")
        else:
            used += size


def _json_object(text: str) -> dict[str, Any]:
    body = (text or "").strip()
    if body.startswith("```"):
        lines = body.split("\n")[1:]
        if lines and lines[-1].strip().startswith("```"):
            lines = lines[:-1]
        body = "\n".join(lines).strip()
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise MalformedExtraction(f"the extraction answer is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MalformedExtraction(
            f"the extraction answer is JSON {type(data).__name__}, not an object"
        )
    return data


def _props(raw: dict[str, Any], limit: int, dropped: list[str], what: str) -> dict[str, Any]:
    props = raw.get("properties")
    if props is None:
        return {}
    if not isinstance(props, dict):
        dropped.append(f"{what}: properties is not an object")
        return {}
    return bounded_properties(props, limit, dropped, what)


def _entity(raw: Any, i: int, dropped: list[str]) -> ExtractedEntity | None:
    if not isinstance(raw, dict):
        dropped.append(f"entity #{i} is not an object")
        return None
    name = clean_text(raw.get("name"), MAX_NAME) if isinstance(raw.get("name"), str) else ""
    if not name:
        dropped.append(f"entity #{i} has no name")
        return None
    similar = raw.get("similar_to")
    return ExtractedEntity(
        name=name,
        entity_type=clean_text(raw.get("type"), MAX_TYPE) or "other",
        properties=_props(raw, MAX_ENTITY_PROPERTIES_BYTES, dropped, f"entity {name!r}"),
        confidence=confidence(raw.get("confidence")),
        similar_to=clean_text(similar, MAX_NAME) or None if isinstance(similar, str) else None,
    )


def _relationship(raw: Any, i: int, dropped: list[str]) -> ExtractedRelationship | None:
    if not isinstance(raw, dict):
        dropped.append(f"relationship #{i} is not an object")
        return None
    source = raw.get("source")
    target = raw.get("target")
    if not isinstance(source, str) or not isinstance(target, str):
        dropped.append(f"relationship #{i} needs string source and target")
        return None
    source, target = clean_text(source, MAX_NAME), clean_text(target, MAX_NAME)
    if not source or not target:
        dropped.append(f"relationship #{i} needs source and target")
        return None
    what = f"relationship {source!r} -> {target!r}"
    return ExtractedRelationship(
        source=source,
        target=target,
        relationship_type=clean_text(raw.get("type"), MAX_RELATIONSHIP_TYPE) or "related",
        properties=_props(raw, MAX_RELATIONSHIP_PROPERTIES_BYTES, dropped, what),
        confidence=confidence(raw.get("confidence")),
    )
