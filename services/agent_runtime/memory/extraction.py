"""The extraction work item's worker (Heym §7): for each target graph of a finished run, ask
the model once what to remember, record the answer, merge it, and record the item's end.

Consumed from `heym.work.*.agent_runtime.*` by its own durable consumer, so extraction never
holds up a run's answer and survives a restart: a redelivered item skips what is recorded. Each
target's reply is recorded (`memory.extraction_replied`) before it is merged, so a restart merges
the recorded answer instead of asking again; the merge carries the item id, so it happens once
per graph. Temperature 0.2 and a JSON-object response, asked again without `response_format`
when the provider refuses it. A failure (unreachable model, malformed answer, missing
credential) is logged, traced and recorded in `memory.extraction_completed`; it never fails the
run, which has ended long before.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from contracts.base import Event
from contracts.memory import (
    MemoryExtractionCompleted,
    MemoryExtractionMerged,
    MemoryExtractionReplied,
    MemoryOrigin,
    MemoryTarget,
)
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.memory.extraction import MalformedExtraction, parse_extraction
from libs.memory.graph import MemoryGraph, merge_key
from libs.memory.merge import merge_extraction
from libs.memory.writer import MemoryWriter
from libs.observability.redaction import sanitize_trace_payload
from libs.secrets.credentials import ResolvedCredential
from services.agent_runtime.memory.instructions import SYSTEM, user_payload
from services.agent_runtime.memory.item import ExtractionItem, fold, refused_json
from services.agent_runtime.model import ModelClients, ModelError
from services.agent_runtime.steps.context import Resolve, now_ms

log = logging.getLogger(__name__)

MAX_ATTEMPTS: Final = 3
# A longer answer is recorded in its parsed, bounded form (or cut, when it is not JSON).
MAX_REPLY_BYTES: Final = 256 * 1024
TEMPERATURE: Final = 0.2


class ItemBusy(Exception):
    """Someone else recorded on this item meanwhile; the delivery is retried later."""


class Extractor:
    def __init__(
        self,
        event_log: EventLog,
        models: ModelClients,
        resolve: Resolve,
        *,
        backoff_s: float = 0.5,
    ) -> None:
        self._log = event_log
        self._writer = MemoryWriter(event_log)
        self._models = models
        self._resolve = resolve
        self._backoff_s = backoff_s

    async def run(self, subject: str) -> None:
        item = fold(await self._log.read(subject))
        if item.request is None or item.completed is not None:
            return  # not an extraction, or finished by an earlier delivery
        job = _Job(self, subject, item)
        results = [await job.target(i, t) for i, t in enumerate(item.request.targets)]
        failed = any(r["status"] == "error" for r in results)
        await job.record(
            [
                MemoryExtractionCompleted(
                    status="error" if failed else "success",
                    results=results,
                    finished_at_ms=now_ms(),
                )
            ]
        )

    async def give_up(self, subject: str, why: str) -> None:
        """Every delivery of the item failed: record its end so it is not left open."""
        item = fold(await self._log.read(subject))
        if item.request is None or item.completed is not None:
            return
        log.error("memory extraction %s failed for good: %s", subject, why)
        await _Job(self, subject, item).record(
            [
                MemoryExtractionCompleted(
                    status="error",
                    results=[{"status": "error", "error": why}],
                    finished_at_ms=now_ms(),
                )
            ]
        )


class _Job:
    """One delivery's work on one item."""

    def __init__(self, ex: Extractor, subject: str, item: ExtractionItem) -> None:
        assert item.request is not None
        self.ex = ex
        self.subject = subject
        self.item = item
        self.request = item.request
        self.credential: ResolvedCredential | None = None

    async def record(self, events: list[Event]) -> None:
        try:
            appended = await self.ex._log.append(
                self.subject,
                events,
                expected_sequence=self.item.last_seq,
                correlation_id=self.subject.split(".")[2],
            )
        except ConcurrencyConflict:
            raise ItemBusy(self.subject) from None
        self.item.last_seq = appended.sequence
        for event in events:
            if isinstance(event, MemoryExtractionReplied):
                self.item.replies.setdefault(event.target, []).append(event)

    async def target(self, index: int, target: MemoryTarget) -> dict[str, Any]:
        base: dict[str, Any] = {"workflow_id": target.workflow_id, "node_id": target.node_id}
        graph = await self.ex._writer.load(target.workflow_id, target.node_id)
        if merge_key(self.origin()) in graph.merged_items:
            return {**base, "status": "merged"}  # by an earlier delivery
        reply = self.item.answer(index)
        while reply is None:
            failures = self.item.failures(index)
            last = failures[-1] if failures else None
            if len(failures) >= MAX_ATTEMPTS or (
                last is not None and not last.retryable and not refused_json(last)
            ):
                return self._failed(base, f"the extraction model failed: {last and last.error}")
            if last is not None and last.retryable:
                await asyncio.sleep(self.ex._backoff_s * 2 ** (len(failures) - 1))
            credential = await self._credential()
            if credential is None:
                return self._failed(base, f"credential {self.request.credential_id!r} not found")
            await self.record([await self._ask(index, graph, credential)])
            reply = self.item.answer(index)
        try:
            extraction = parse_extraction(reply.text)
        except MalformedExtraction as exc:
            return self._failed(base, str(exc))
        return {**base, **await self._merge(index, target, graph, extraction)}

    def _failed(self, base: dict[str, Any], error: str) -> dict[str, Any]:
        log.warning(
            "memory extraction %s for %s/%s: %s",
            self.request.item_id,
            base["workflow_id"],
            base["node_id"],
            error,
        )
        return {**base, "status": "error", "error": error[:2000]}

    async def _credential(self) -> ResolvedCredential | None:
        if self.credential is None:
            self.credential = await self.ex._resolve(
                self.request.credential_id, self.request.owner_id
            )
        return self.credential

    async def _ask(
        self, index: int, graph: MemoryGraph, credential: ResolvedCredential
    ) -> MemoryExtractionReplied:
        json_mode = self.item.json_mode(index)
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": user_payload(self.request.transcript, graph)},
        ]
        response_format = {"type": "json_object"} if json_mode else None
        common: dict[str, Any] = {
            "target": index,
            "invocation_id": self.request.invocation_id,
            "attempt": len(self.item.replies.get(index, [])) + 1,
            "model": self.request.model,
            "json_mode": json_mode,
        }
        request = {
            "messages": messages,
            "temperature": TEMPERATURE,
            "response_format": response_format,
        }
        try:
            reply = await self.ex._models.chat(
                credential,
                model=self.request.model,
                messages=messages,
                temperature=TEMPERATURE,
                response_format=response_format,
            )
        except ModelError as exc:
            return MemoryExtractionReplied(
                **common,
                error=str(exc),
                retryable=exc.retryable,
                trace=sanitize_trace_payload({"request": request, "response": {}}),
            )
        text = recordable(str(reply.message.get("content") or ""))
        return MemoryExtractionReplied(
            **common,
            text=text,
            usage=reply.usage,
            elapsed_ms=reply.elapsed_ms,
            trace=sanitize_trace_payload({"request": request, "response": reply.message}),
        )

    def origin(self) -> MemoryOrigin:
        """What the merges of this item name as their writer."""
        return MemoryOrigin(
            source="extraction",
            run_id=self.subject.split(".")[2],
            invocation_id=self.request.invocation_id,
            turn=self.request.turn,
            workflow_id=self.request.workflow_id,
            node_id=self.request.node_id,
            item_id=self.request.item_id,
        )

    async def _merge(
        self, index: int, target: MemoryTarget, graph: MemoryGraph, extraction: Any
    ) -> dict[str, Any]:
        origin = self.origin()
        key = merge_key(origin)
        seed = f"{key}/{target.workflow_id}/{target.node_id}"

        def decide(g: MemoryGraph) -> list[Event]:
            if key in g.merged_items:
                return []
            return merge_extraction(g, extraction, origin, seed)

        change = await self.ex._writer.change(
            target.workflow_id,
            target.node_id,
            decide,
            graph=graph,
            message_id=f"{self.subject}:merge:{index}",
            correlation_id=origin.run_id,
        )
        merged = next((e for e in change.events if isinstance(e, MemoryExtractionMerged)), None)
        if merged is None:
            return {"status": "merged"}
        out: dict[str, Any] = {
            "status": "merged",
            "entities_written": merged.entities_written,
            "relationships_written": merged.relationships_written,
            "deleted": merged.deleted,
        }
        if merged.dropped:
            out["dropped"] = merged.dropped
        return out


def recordable(text: str) -> str:
    """The answer as recorded: as it came when small; else its bounded parsed form, so a huge
    property costs the property, not the whole answer; else (not JSON) cut, and malformed."""
    raw = text.encode()
    if len(raw) <= MAX_REPLY_BYTES:
        return text
    try:
        return parse_extraction(text).to_json()
    except MalformedExtraction:
        return raw[:MAX_REPLY_BYTES].decode(errors="ignore")
