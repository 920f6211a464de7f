"""Two projections of memory events: the graph tables, and the extraction traces.

`MemoryProjector` (`heym.memory.>`) keeps `agent_memory_entities`, `agent_memory_relationships`
and each graph's last projected sequence. Statements go phase by phase in the order that
gives the fold's result for any batch: entity writes, relationship writes (only between
entities that exist, as in the fold), relationship deletions, entity deletions (cascading to
their relationships), then erased graphs (nothing is written to a graph after its erasure).
Writers never reuse a deleted id, so no later write of a batch is undone by an earlier
deletion. Dropping the rows and the projector's position rebuilds the same
tables from the log (timestamps are the messages' own).

`MemoryTraceProjector` (`heym.work.*.agent_runtime.*`) writes one `llm_traces` row (source
`agent_memory`) per recorded extraction model call, failed ones with their error.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts import subjects
from contracts.base import Envelope
from contracts.memory import (
    MemoryEntityDeleted,
    MemoryEntityUpserted,
    MemoryExtractionReplied,
    MemoryGraphErased,
    MemoryRelationshipDeleted,
    MemoryRelationshipUpserted,
)
from libs.projection.statements import StatementBatch
from services.agent_runtime.projection import TRACE

_GRAPH = """
    INSERT INTO agent_memory_graphs (workflow_id, canvas_node_id, last_sequence)
    VALUES ($1, $2, $3)
    ON CONFLICT (workflow_id, canvas_node_id) DO UPDATE SET
        last_sequence = GREATEST(agent_memory_graphs.last_sequence, EXCLUDED.last_sequence)"""

_ENTITY = """
    INSERT INTO agent_memory_entities (id, workflow_id, canvas_node_id, entity_name, entity_type,
                                       properties, confidence, origin, created_at, updated_at,
                                       sequence)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10)
    ON CONFLICT (id) DO UPDATE SET
        entity_name = EXCLUDED.entity_name, entity_type = EXCLUDED.entity_type,
        properties = EXCLUDED.properties, confidence = EXCLUDED.confidence,
        origin = EXCLUDED.origin, updated_at = EXCLUDED.updated_at, sequence = EXCLUDED.sequence"""

_RELATIONSHIP = """
    INSERT INTO agent_memory_relationships (id, workflow_id, canvas_node_id, source_id, target_id,
                                            relationship_type, properties, confidence, origin,
                                            created_at, updated_at, sequence)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11
    WHERE EXISTS (SELECT 1 FROM agent_memory_entities WHERE id = $4)
      AND EXISTS (SELECT 1 FROM agent_memory_entities WHERE id = $5)
    ON CONFLICT (id) DO UPDATE SET
        relationship_type = EXCLUDED.relationship_type, properties = EXCLUDED.properties,
        confidence = EXCLUDED.confidence, origin = EXCLUDED.origin,
        updated_at = EXCLUDED.updated_at, sequence = EXCLUDED.sequence"""

_DELETE_RELATIONSHIP = "DELETE FROM agent_memory_relationships WHERE id = $1"
_DELETE_ENTITY = "DELETE FROM agent_memory_entities WHERE id = $1"
# An erased graph: its relationships go with its entities (ON DELETE CASCADE).
_ERASE = "DELETE FROM agent_memory_entities WHERE workflow_id = $1 AND canvas_node_id = $2"


class MemoryProjector:
    name = "agent_runtime-memory-graphs"
    filter_subjects: Sequence[str] = (subjects.ALL_MEMORY_EVENTS,)

    def project(self, envelope: Envelope, sql: StatementBatch) -> None:
        ev = envelope.event
        at = envelope.recorded_at
        seq = envelope.sequence
        if isinstance(ev, MemoryEntityUpserted):
            sql.add(
                _ENTITY,
                ev.entity_id,
                ev.workflow_id,
                ev.node_id,
                ev.name,
                ev.entity_type,
                ev.properties,
                ev.confidence,
                ev.origin,
                at,
                seq,
                phase=1,
            )
        elif isinstance(ev, MemoryRelationshipUpserted):
            sql.add(
                _RELATIONSHIP,
                ev.relationship_id,
                ev.workflow_id,
                ev.node_id,
                ev.source_id,
                ev.target_id,
                ev.relationship_type,
                ev.properties,
                ev.confidence,
                ev.origin,
                at,
                seq,
                phase=2,
            )
        elif isinstance(ev, MemoryRelationshipDeleted):
            sql.add(_DELETE_RELATIONSHIP, ev.relationship_id, phase=3)
        elif isinstance(ev, MemoryEntityDeleted):
            sql.add(_DELETE_ENTITY, ev.entity_id, phase=4)
        elif isinstance(ev, MemoryGraphErased):
            sql.add(_ERASE, ev.workflow_id, ev.node_id, phase=5)  # nothing follows it
        else:
            return
        sql.add(_GRAPH, ev.workflow_id, ev.node_id, seq, phase=0)


class MemoryTraceProjector:
    name = "agent_runtime-memory-traces"
    filter_subjects: Sequence[str] = (subjects.work_items_for("agent_runtime"),)

    def project(self, envelope: Envelope, sql: StatementBatch) -> None:
        ev = envelope.event
        if not isinstance(ev, MemoryExtractionReplied):
            return
        request = ev.trace.get("request", {}) if ev.trace else {}
        response = ev.trace.get("response", {}) if ev.trace else {}
        sql.add(
            TRACE,
            envelope.event_id,
            envelope.run_id,
            ev.invocation_id,
            "chat.completions",
            ev.model,
            request,
            response,
            ev.usage.get("prompt_tokens", 0),
            ev.usage.get("completion_tokens", 0),
            ev.usage.get("total_tokens", 0),
            ev.elapsed_ms,
            envelope.recorded_at,
            envelope.sequence,
            "agent_memory",
            ev.error,
            phase=1,
        )
