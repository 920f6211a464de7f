"""`MemoryWriter`: read a graph from its subject and append changes with optimistic concurrency.

Every writer (an extraction, a REST edit) decides its change from the fold of the graph's
own subject and appends it with that subject's expected last sequence. A conflict (someone
wrote in between) folds the tail and decides again, so two writers never build on the same
version and nothing written is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from contracts import subjects
from contracts.base import Event
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.memory.graph import MemoryGraph, evolve

Decide = Callable[[MemoryGraph], list[Event]]


class MemoryBusy(Exception):
    """The graph kept changing under a writer (too many concurrent writers); try later."""


@dataclass(frozen=True)
class Change:
    graph: MemoryGraph  # the graph the change was decided on
    events: list[Event]
    sequence: int  # where it landed (0: nothing to write)


class MemoryWriter:
    def __init__(self, event_log: EventLog, *, attempts: int = 10) -> None:
        self._log = event_log
        self._attempts = attempts

    async def load(self, workflow_id: str, node_id: str) -> MemoryGraph:
        graph = MemoryGraph(workflow_id=workflow_id, node_id=node_id)
        await self._catch_up(graph, subjects.memory(workflow_id, node_id))
        return graph

    async def _catch_up(self, graph: MemoryGraph, subject: str) -> None:
        for env in await self._log.read(subject, after=graph.last_seq):
            evolve(graph, env.event, env.sequence)

    async def change(
        self,
        workflow_id: str,
        node_id: str,
        decide: Decide,
        *,
        message_id: str | None = None,
        correlation_id: str | None = None,
        graph: MemoryGraph | None = None,
    ) -> Change:
        """Decide on the current graph and append; on a conflict catch up and decide again.

        `decide` must not change the graph it is given (merges work on their own copy); it may
        raise (a domain error about the edit)."""
        subject = subjects.memory(workflow_id, node_id)
        current = graph if graph is not None else await self.load(workflow_id, node_id)
        for _ in range(self._attempts):
            if current.erased:
                return Change(graph=current, events=[], sequence=0)  # its workflow is gone
            events = decide(current)
            if not events:
                return Change(graph=current, events=[], sequence=0)
            try:
                appended = await self._log.append(
                    subject,
                    events,
                    expected_sequence=current.last_seq,
                    message_id=message_id,
                    correlation_id=correlation_id,
                )
            except ConcurrencyConflict:
                await self._catch_up(current, subject)
                continue
            return Change(graph=current, events=events, sequence=appended.sequence)
        raise MemoryBusy(f"memory of node {node_id!r} kept changing; try again")
