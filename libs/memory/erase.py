"""Erasing a deleted workflow's agent memory, from the log as well as from the tables.

Heym deletes a workflow's memory with the workflow (its rows cascade). Here the memory is a
log, so deleting the rows would not be enough: a rebuild would bring them back, and the facts
would stay readable in the stream. Each of the workflow's graphs (every `heym.memory.<wid>.*`
subject the stream holds, so graphs of nodes removed earlier too) gets a `memory.graph_erased`
marker, which the projection turns into deleting the graph's rows and after which writers
write nothing; then the subject is purged down to that marker.
"""

from __future__ import annotations

import logging
import time

import nats
from nats.aio.client import Client

from contracts import subjects
from contracts.memory import MemoryGraphErased
from libs.eventlog import EventLog

log = logging.getLogger(__name__)


async def erase_workflow_memory(nc: Client, event_log: EventLog, workflow_id: str) -> int:
    """Erase every memory graph of `workflow_id`; returns how many there were. Repeatable:
    a graph erased before is erased again harmlessly (its subject holds only the marker)."""
    js = nc.jetstream()
    prefix = f"heym.memory.{subjects.token(workflow_id)}."
    try:
        info = await js.stream_info(subjects.RUN_STREAM, subjects_filter=f"{prefix}>")
    except nats.js.errors.NotFoundError:
        return 0
    found = sorted((info.state.subjects or {}).keys())
    erased = 0
    for subject in found:
        node_id = await _node_of(event_log, subject)
        if node_id is None:
            log.warning("memory subject %s names no node it could be erased as", subject)
            continue
        marker = MemoryGraphErased(
            workflow_id=workflow_id, node_id=node_id, erased_at_ms=int(time.time() * 1000)
        )
        appended = await event_log.append(subject, [marker])
        # Everything before the marker goes; later writers see the marker and write nothing.
        await js.purge_stream(subjects.RUN_STREAM, subject=subject, seq=appended.sequence)
        erased += 1
    return erased


async def _node_of(event_log: EventLog, subject: str) -> str | None:
    """The canvas node id of a graph subject, from its last event (tokens may be hashed)."""
    last = await event_log.last_sequence(subject)
    for env in reversed(await event_log.read_recent(subject, after=max(0, last - 1))):
        node_id = getattr(env.event, "node_id", None)
        if isinstance(node_id, str) and node_id:
            return node_id
    return None
