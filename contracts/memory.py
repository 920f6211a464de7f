"""Agent memory events: a canvas node's knowledge graph on `heym.memory.<workflow>.<node>`,
and the extraction work item that writes it after a run (`heym.work.<run>.agent_runtime.<item>`).

A memory graph (Heym §7) is keyed by `(workflow_id, canvas_node_id)`. Every change to it is an
event on the graph's own subject, appended with the subject's expected last sequence (two
writers cannot both build on the same graph); the Postgres tables are a projection of these
events, so a graph can be rebuilt, audited (each change names the run, invocation and turn, or
the user, that wrote it) and replayed.

Extraction is a durable work item of the agent runtime: `memory.extraction_requested` is
appended with expected sequence 0 when an agent run succeeds (once per invocation), each
target's model reply is recorded before it is merged, and `memory.extraction_completed` ends
the item. The merge into a graph carries the item id (`memory.extraction_merged`), so a
redelivered item never merges twice.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.base import Event

MemorySource = Literal["extraction", "api"]
Permission = Literal["own", "read", "write"]


class MemoryOrigin(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Who wrote a change: an extraction after a run (run, invocation, the run's last turn,
    the agent node whose run it was, the work item) or a user through the REST API."""

    source: MemorySource
    run_id: str = ""
    invocation_id: str = ""
    turn: int = 0
    workflow_id: str = ""
    node_id: str = ""
    item_id: str = ""
    user_id: str = ""


class MemoryEntityUpserted(Event, tag="memory.entity_upserted", frozen=True):
    """An entity was created, or replaced as a whole (properties already merged). Every memory
    event names its graph (`workflow_id`, `node_id`: the canvas node id as the user gave it)."""

    workflow_id: str
    node_id: str
    entity_id: str
    name: str
    entity_type: str
    origin: MemoryOrigin
    properties: dict[str, Any] = msgspec.field(default_factory=dict)
    confidence: float = 0.0


class MemoryEntityDeleted(Event, tag="memory.entity_deleted", frozen=True):
    """An entity left the graph; its relationships go with it.

    `reason`: `revoked` (the user negated it), `pruned` (no relationship left), `api`."""

    workflow_id: str
    node_id: str
    entity_id: str
    reason: str
    origin: MemoryOrigin


class MemoryRelationshipUpserted(Event, tag="memory.relationship_upserted", frozen=True):
    workflow_id: str
    node_id: str
    relationship_id: str
    source_id: str
    target_id: str
    relationship_type: str
    origin: MemoryOrigin
    properties: dict[str, Any] = msgspec.field(default_factory=dict)
    confidence: float = 0.0


class MemoryRelationshipDeleted(Event, tag="memory.relationship_deleted", frozen=True):
    """A relationship left the graph. `reason`: `replaced` (a single-slot type such as
    "works for" got a new target), `api`."""

    workflow_id: str
    node_id: str
    relationship_id: str
    reason: str
    origin: MemoryOrigin


class MemoryGraphErased(Event, tag="memory.graph_erased", frozen=True):
    """The graph is gone for good (its workflow was deleted): the projection drops its rows,
    writers write nothing more to it, and everything recorded before it on the subject is
    purged from the log (this marker is kept, so a replay knows why the subject is empty)."""

    workflow_id: str
    node_id: str
    reason: str = "workflow deleted"
    erased_at_ms: int = 0


class MemoryExtractionMerged(Event, tag="memory.extraction_merged", frozen=True):
    """The end of one extraction's merge into this graph (last event of its batch): marks the
    work item as applied here, even when it changed nothing."""

    workflow_id: str
    node_id: str
    origin: MemoryOrigin
    entities_written: int = 0
    relationships_written: int = 0
    deleted: int = 0
    # Parts of the model's answer left out (malformed items, bounds), said once, not silently.
    dropped: list[str] = msgspec.field(default_factory=list)


class MemoryTarget(msgspec.Struct, frozen=True, kw_only=True):
    """A graph an agent's run reads or writes: its own (`own`), or one another agent node
    shares with it (`read`, or `write` when extraction may merge into it)."""

    workflow_id: str
    node_id: str
    label: str = ""
    permission: Permission = "own"


class MemoryExtractionRequested(Event, tag="memory.extraction_requested", frozen=True):
    """Extract durable facts from a successful agent run into each target graph (one model
    call per target). `transcript` is already bounded (Heym §7)."""

    item_id: str
    invocation_id: str
    node_id: str
    node_label: str
    workflow_id: str
    owner_id: str
    credential_id: str
    model: str
    targets: list[MemoryTarget]
    transcript: str
    turn: int = 0
    requested_at_ms: int = 0


class MemoryExtractionReplied(Event, tag="memory.extraction_replied", frozen=True):
    """One target's extraction model call, recorded before its answer is merged (a restart
    merges the recorded answer and does not ask again). A failed call has `error`."""

    target: int
    invocation_id: str
    attempt: int = 1
    model: str = ""
    text: str = ""
    error: str | None = None
    retryable: bool = False
    json_mode: bool = True
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    elapsed_ms: float = 0.0
    # The stored (redacted, bounded) request and response for the LLM trace.
    trace: dict[str, Any] = msgspec.field(default_factory=dict)


class MemoryExtractionCompleted(Event, tag="memory.extraction_completed", frozen=True):
    """The work item's end. `results` per target: `{workflow_id, node_id, status, error?}`;
    a failed extraction is recorded here and never fails the run."""

    status: Literal["success", "error"]
    results: list[dict[str, Any]] = msgspec.field(default_factory=list)
    finished_at_ms: int = 0


MEMORY_EVENTS: tuple[type[Event], ...] = (
    MemoryEntityUpserted,
    MemoryEntityDeleted,
    MemoryRelationshipUpserted,
    MemoryRelationshipDeleted,
    MemoryExtractionMerged,
    MemoryGraphErased,
)
MEMORY_WORK_EVENTS: tuple[type[Event], ...] = (
    MemoryExtractionRequested,
    MemoryExtractionReplied,
    MemoryExtractionCompleted,
)
