"""The catalogue of every event type and the one codec that writes and reads event batches.

A message in the run stream carries one event batch: a JSON array of tagged events. Each
event is decoded on its own so that one unknown tag (from a newer producer) becomes an
`UnknownEvent` instead of failing the whole batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from operator import or_
from typing import Any

import msgspec

from contracts.agents import AGENT_EVENTS
from contracts.base import Event, UnknownEvent
from contracts.chat import CHAT_EVENTS
from contracts.memory import MEMORY_EVENTS, MEMORY_WORK_EVENTS
from contracts.nodes import NODE_EVENTS
from contracts.review import REVIEW_EVENTS
from contracts.runs import RUN_LIFECYCLE_EVENTS
from contracts.schedules import SCHEDULE_EVENTS
from contracts.tools import SANDBOX_TOOL_EVENTS

EVENT_TYPES: tuple[type[Event], ...] = (
    *RUN_LIFECYCLE_EVENTS,
    *NODE_EVENTS,
    *AGENT_EVENTS,
    *SANDBOX_TOOL_EVENTS,
    *CHAT_EVENTS,
    *SCHEDULE_EVENTS,
    *REVIEW_EVENTS,
    *MEMORY_EVENTS,
    *MEMORY_WORK_EVENTS,
)


_SIZE_ENCODER = msgspec.json.Encoder()


def encoded_size(value: Any) -> int | None:
    """How many bytes `value` takes in an event batch, or None if it cannot be encoded at all
    (an integer too long for a decimal string, a value JSON has no form for)."""
    try:
        return len(_SIZE_ENCODER.encode(value))
    except (TypeError, ValueError, OverflowError):
        return None


def too_large(value: Any, limit: int) -> str | None:
    """Why `value` cannot go into one event of at most `limit` bytes, or None if it can."""
    size = encoded_size(value)
    if size is None:
        return "it cannot be encoded as JSON (for example an integer with more than 4300 digits)"
    if size > limit:
        return f"it is {size / 1048576:.1f} MiB; one event may hold {limit / 1048576:.1f} MiB"
    return None


class BatchDecodeError(ValueError):
    """The message body is not an event batch (not JSON, not an array, or a malformed event)."""


class _TagOnly(msgspec.Struct):
    type: str


class EventCodec:
    """Encodes event batches and decodes them into typed events; built once per process."""

    def __init__(self, types: Sequence[type[Event]] = EVENT_TYPES) -> None:
        tags = [str(t.__struct_config__.tag) for t in types]
        if len(set(tags)) != len(tags):
            raise ValueError(f"duplicate event tags in catalogue: {sorted(tags)}")
        union: Any = reduce(or_, types)
        self._known = frozenset(str(t) for t in tags)
        self._encoder = msgspec.json.Encoder()
        self._raw_list = msgspec.json.Decoder(list[msgspec.Raw])
        self._event = msgspec.json.Decoder(union)
        self._tag = msgspec.json.Decoder(_TagOnly)
        # The common case, a batch of known, well-formed events, in one pass; anything else
        # (an unknown tag, a malformed event) is taken apart event by event below.
        self._batch = msgspec.json.Decoder(list[union])

    def encode(self, events: Sequence[Event]) -> bytes:
        return self._encoder.encode(list(events))

    def decode(self, body: bytes) -> list[Event | UnknownEvent]:
        try:
            return self._batch.decode(body)
        except msgspec.DecodeError:
            pass
        try:
            raws = self._raw_list.decode(body)
        except msgspec.DecodeError as exc:
            raise BatchDecodeError(f"not an event batch: {exc}") from exc
        out: list[Event | UnknownEvent] = []
        for raw in raws:
            try:
                tag = self._tag.decode(raw).type
            except msgspec.DecodeError as exc:
                raise BatchDecodeError(f"event without a string 'type': {exc}") from exc
            if tag not in self._known:
                out.append(UnknownEvent(type=tag, raw=bytes(raw)))
                continue
            try:
                out.append(self._event.decode(raw))
            except msgspec.DecodeError as exc:
                raise BatchDecodeError(f"malformed {tag!r} event: {exc}") from exc
        return out


class Channel(msgspec.Struct, frozen=True, kw_only=True):
    """A documented channel of the run stream: who writes it and which events it carries."""

    name: str
    address: str
    writer: str
    description: str
    events: tuple[type[Event], ...]


def channels() -> tuple[Channel, ...]:
    """The public event contract, channel by channel (rendered as AsyncAPI by the gateway)."""
    from contracts.agents import (
        AgentCancelRequested,
        AgentFinished,
        AgentNudged,
        AgentRequested,
        AgentStarted,
        ContextCompressed,
        GuardrailChecked,
        LlmCallRecorded,
        ModelCallFailed,
        SubAgentDispatched,
        ToolCallRecorded,
        ToolCallsDispatched,
    )
    from contracts.chat import CHAT_COMMAND_EVENTS, CHAT_TURN_EVENTS
    from contracts.memory import (
        MemoryEntityDeleted,
        MemoryEntityUpserted,
        MemoryExtractionCompleted,
        MemoryExtractionMerged,
        MemoryExtractionReplied,
        MemoryExtractionRequested,
        MemoryGraphErased,
        MemoryRelationshipDeleted,
        MemoryRelationshipUpserted,
    )
    from contracts.nodes import (
        ChildRunStarted,
        NodeAttemptFailed,
        NodeCompleted,
        NodeDispatched,
        NodeRetryScheduled,
        TimerFired,
        TimerScheduled,
    )
    from contracts.review import (
        ChildPaused,
        ReviewClosed,
        ReviewDecided,
        ReviewExpired,
        ReviewExpiryDue,
        ReviewOpened,
        ReviewRequested,
    )
    from contracts.runs import (
        CancelRequested,
        RunCompleted,
        RunEndReported,
        RunOutputReady,
        RunPaused,
        RunPauseReported,
        RunRequested,
        RunResumed,
        RunStarted,
    )
    from contracts.schedules import CronTicked
    from contracts.tools import SandboxToolCancelled, SandboxToolDispatched

    return (
        Channel(
            name="run-commands",
            address="heym.run.{run_id}.cmd",
            writer="gateway",
            description="Requests into a run from outside: start it, cancel it.",
            events=(RunRequested, CancelRequested),
        ),
        Channel(
            name="run-decisions",
            address="heym.run.{run_id}.sched.{service}",
            writer="scheduler",
            description=(
                "The scheduler's decisions, one event batch per decision. The last token names "
                "the service that has to act on the batch (`none` when no service does)."
            ),
            events=(
                RunStarted,
                NodeDispatched,
                NodeCompleted,
                NodeAttemptFailed,
                NodeRetryScheduled,
                TimerScheduled,
                ChildRunStarted,
                RunOutputReady,
                RunPaused,
                RunResumed,
                RunCompleted,
            ),
        ),
        Channel(
            name="node-results",
            address="heym.run.{run_id}.node.{invocation_id}",
            writer="executing service (agent_runtime, tool_sandbox, scheduler for child runs)",
            description=(
                "One node invocation's result: exactly one final NodeCompleted or "
                "NodeAttemptFailed, after one `pending` NodeCompleted per human review "
                "checkpoint if the node paused."
            ),
            events=(NodeCompleted, NodeAttemptFailed),
        ),
        Channel(
            name="cron-schedules",
            address="heym.cron.schedule.{workflow_id}",
            writer="gateway (on save), scheduler (reconciliation)",
            description=(
                "A cron workflow's schedule: a JetStream cron schedule message (Nats-Schedule) "
                "whose target is heym.cron.tick.{workflow_id}."
            ),
            events=(CronTicked,),
        ),
        Channel(
            name="cron-ticks",
            address="heym.cron.tick.{workflow_id}",
            writer="NATS (the schedule firing)",
            description="One message per tick; the scheduler starts one run (trigger source cron).",
            events=(CronTicked,),
        ),
        Channel(
            name="run-timers",
            address="heym.run.{run_id}.timer",
            writer="NATS (scheduled messages set by the scheduler)",
            description="Durable timers firing: retry back-off and wait nodes.",
            events=(TimerFired,),
        ),
        Channel(
            name="chat-commands",
            address="heym.chat.{conversation_id}.cmd",
            writer="gateway; scheduler (run ends); NATS (timers)",
            description=(
                "What comes into a conversation with the Heym Agent from outside: its creation "
                "and edits, user messages, queue edits, cancellation, the ends (and pauses "
                "for review) of runs the assistant started, and its fired timers."
            ),
            events=(*CHAT_COMMAND_EVENTS, RunEndReported, RunPauseReported),
        ),
        Channel(
            name="chat-turns",
            address="heym.chat.{conversation_id}.turn",
            writer="agent_runtime (the assistant)",
            description=(
                "What the assistant recorded, step by step, before using it: a turn's prompt, "
                "each model round, each tool's start and end, compressions, the turn's end."
            ),
            events=CHAT_TURN_EVENTS,
        ),
        Channel(
            name="agent-invocations",
            address="heym.agent.{run_id}.{invocation_id}",
            writer=(
                "agent_runtime (its steps), the scheduler (requests, cancels, sub-workflow "
                "results), the tool sandbox and sub-agents (tool results)"
            ),
            description=(
                "One agent or llm invocation's own history: its request, prompt, model turns "
                "(and failed attempts), tool dispatches and results, compressions, cancel, "
                "and its end. Internal to the agent runtime: may change between versions."
            ),
            events=(
                AgentRequested,
                SubAgentDispatched,
                AgentStarted,
                GuardrailChecked,
                LlmCallRecorded,
                ModelCallFailed,
                ToolCallsDispatched,
                ToolCallRecorded,
                ContextCompressed,
                AgentCancelRequested,
                AgentNudged,
                AgentFinished,
                ReviewRequested,
                ReviewOpened,
                ReviewDecided,
                ReviewExpired,
                ChildPaused,
            ),
        ),
        Channel(
            name="work-items",
            address="heym.work.{run_id}.{service}.{item_id}",
            writer="agent_runtime",
            description=(
                "Work for a service that is not a scheduler decision: an agent's tool call for "
                "the tool sandbox, and its cancellation; an agent run's memory extraction (its "
                "request, each target's recorded model reply, its end). Internal: may change "
                "between versions."
            ),
            events=(
                SandboxToolDispatched,
                SandboxToolCancelled,
                MemoryExtractionRequested,
                MemoryExtractionReplied,
                MemoryExtractionCompleted,
            ),
        ),
        Channel(
            name="agent-memory",
            address="heym.memory.{workflow_id}.{node_token}",
            writer="agent_runtime (extraction after a run), gateway (the memory REST API)",
            description=(
                "An agent node's persistent memory graph: every change to its entities and "
                "relationships, each naming the run or user that wrote it; appended with the "
                "subject's expected last sequence. The node id is escaped into one token. When "
                "the workflow is deleted, `memory.graph_erased` is appended and everything "
                "before it purged."
            ),
            events=(
                MemoryEntityUpserted,
                MemoryEntityDeleted,
                MemoryRelationshipUpserted,
                MemoryRelationshipDeleted,
                MemoryExtractionMerged,
                MemoryGraphErased,
            ),
        ),
        Channel(
            name="review-requests",
            address="heym.work.{run_id}.review.{request_id}",
            writer=(
                "agent_runtime (the request, a cancel), review (opened), NATS (expiry due, a "
                "scheduled message), gateway (decided)"
            ),
            description=(
                "One human review request's own subject: the review service opens it (token "
                "drawn once), its expiry fires here, and its end is recorded for the review "
                "read model. Internal: may change between versions."
            ),
            events=(ReviewRequested, ReviewOpened, ReviewExpiryDue, ReviewClosed),
        ),
    )
