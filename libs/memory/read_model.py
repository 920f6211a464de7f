"""Reading the memory read model (the projection's tables): a graph for the API, the part of a
graph a prompt shows, where a change landed, and who shares memory with a node."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

import asyncpg
import msgspec

from libs.db.types import Conn

if TYPE_CHECKING:
    Db: TypeAlias = Conn | asyncpg.Pool[Any]
else:
    Db = Any

PROMPT_ENTITIES = 100
PROMPT_RELATIONSHIPS = 200

_ENTITY = """id, workflow_id, canvas_node_id, entity_name, entity_type, properties, confidence,
             origin, created_at, updated_at, sequence"""
_RELATIONSHIP = """id, workflow_id, canvas_node_id, source_id, target_id, relationship_type,
                   properties, confidence, origin, created_at, updated_at, sequence"""


class Share(msgspec.Struct, frozen=True, kw_only=True):
    """An owner node that shares its graph with the asking node, `write` winning over `read`."""

    workflow_id: str
    node_id: str
    label: str
    permission: str


def entity_json(r: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": r["id"],
        "entity_name": r["entity_name"],
        "entity_type": r["entity_type"],
        "properties": r["properties"],
        "confidence": r["confidence"],
        "created_at": r["created_at"].isoformat(),
        "updated_at": r["updated_at"].isoformat(),
        "written_by": r["origin"],
    }


def relationship_json(r: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": r["id"],
        "source_node_id": r["source_id"],
        "target_node_id": r["target_id"],
        "relationship_type": r["relationship_type"],
        "properties": r["properties"],
        "confidence": r["confidence"],
        "created_at": r["created_at"].isoformat(),
        "updated_at": r["updated_at"].isoformat(),
        "written_by": r["origin"],
    }


async def graph_json(db: Db, workflow_id: str, node_id: str) -> dict[str, Any]:
    """The whole graph as the REST API answers it (Heym's `{nodes, edges}`)."""
    entities = await db.fetch(
        f"""SELECT {_ENTITY} FROM agent_memory_entities
            WHERE workflow_id = $1 AND canvas_node_id = $2 ORDER BY sequence, id""",
        workflow_id,
        node_id,
    )
    relationships = await db.fetch(
        f"""SELECT {_RELATIONSHIP} FROM agent_memory_relationships
            WHERE workflow_id = $1 AND canvas_node_id = $2 ORDER BY sequence, id""",
        workflow_id,
        node_id,
    )
    return {
        "nodes": [entity_json(r) for r in entities],
        "edges": [relationship_json(r) for r in relationships],
    }


async def prompt_rows(
    db: Db, workflow_id: str, node_id: str
) -> tuple[list[asyncpg.Record], list[asyncpg.Record]]:
    """The 100 most recently written entities and up to 200 relationships between them."""
    entities = await db.fetch(
        f"""SELECT {_ENTITY} FROM agent_memory_entities
            WHERE workflow_id = $1 AND canvas_node_id = $2
            ORDER BY sequence DESC, id LIMIT {PROMPT_ENTITIES}""",
        workflow_id,
        node_id,
    )
    if not entities:
        return [], []
    relationships = await db.fetch(
        f"""SELECT {_RELATIONSHIP} FROM agent_memory_relationships
            WHERE workflow_id = $1 AND canvas_node_id = $2
              AND source_id = ANY($3::text[]) AND target_id = ANY($3::text[])
            ORDER BY sequence DESC, id LIMIT {PROMPT_RELATIONSHIPS}""",
        workflow_id,
        node_id,
        [r["id"] for r in entities],
    )
    return list(entities), list(relationships)


async def entity_graph(db: Db, entity_id: str) -> tuple[str, str] | None:
    """The graph `(workflow_id, node_id)` an entity belongs to."""
    r = await db.fetchrow(
        "SELECT workflow_id, canvas_node_id FROM agent_memory_entities WHERE id = $1", entity_id
    )
    return (r["workflow_id"], r["canvas_node_id"]) if r else None


async def relationship_graph(db: Db, relationship_id: str) -> tuple[str, str] | None:
    r = await db.fetchrow(
        "SELECT workflow_id, canvas_node_id FROM agent_memory_relationships WHERE id = $1",
        relationship_id,
    )
    return (r["workflow_id"], r["canvas_node_id"]) if r else None


async def entity_row(db: Db, entity_id: str) -> dict[str, Any] | None:
    r = await db.fetchrow(f"SELECT {_ENTITY} FROM agent_memory_entities WHERE id = $1", entity_id)
    return entity_json(r) if r else None


async def relationship_row(db: Db, relationship_id: str) -> dict[str, Any] | None:
    r = await db.fetchrow(
        f"SELECT {_RELATIONSHIP} FROM agent_memory_relationships WHERE id = $1", relationship_id
    )
    return relationship_json(r) if r else None


async def projected_sequence(db: Db, workflow_id: str, node_id: str) -> int:
    value = await db.fetchval(
        """SELECT last_sequence FROM agent_memory_graphs
           WHERE workflow_id = $1 AND canvas_node_id = $2""",
        workflow_id,
        node_id,
    )
    return int(value or 0)


async def shared_with(db: Db, owner_id: str, workflow_id: str, node_id: str) -> list[Share]:
    """Agent nodes of `owner_id`'s workflows whose `memoryShares` name this node.

    Shares from anyone else's workflow are ignored here too (they are refused on save)."""
    try:
        owner = uuid.UUID(owner_id)
    except ValueError:
        return []
    rows = await db.fetch(
        """SELECT s.owner_workflow_id::text AS workflow_id, s.owner_node_id AS node_id,
                  max(s.owner_label) AS label, max(s.permission) AS permission
           FROM agent_memory_shares s JOIN workflows w ON w.id = s.owner_workflow_id
           WHERE s.peer_workflow_id = $1 AND s.peer_node_id = $2 AND w.owner_id = $3
             AND NOT (s.owner_workflow_id::text = $1 AND s.owner_node_id = $2)
           GROUP BY 1, 2 ORDER BY 1, 2""",
        workflow_id,
        node_id,
        owner,
    )
    return [
        Share(
            workflow_id=r["workflow_id"],
            node_id=r["node_id"],
            label=r["label"],
            permission=r["permission"],
        )
        for r in rows
    ]
