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
from contracts.nodes import NODE_EVENTS
from contracts.runs import RUN_LIFECYCLE_EVENTS
from contracts.tools import SANDBOX_TOOL_EVENTS

EVENT_TYPES: tuple[type[Event], ...] = (
    *RUN_LIFECYCLE_EVENTS,
    *NODE_EVENTS,
    *AGENT_EVENTS,
    *SANDBOX_TOOL_EVENTS,
    *CHAT_EVENTS,
)


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

    def encode(self, events: Sequence[Event]) -> bytes:
        return self._encoder.encode(list(events))

    def decode(self, body: bytes) -> list[Event | UnknownEvent]:
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
    from contracts.chat import CHAT_COMMAND_EVENTS, CHAT_TURN_EVENTS
    from contracts.nodes import (
        ChildRunStarted,
        NodeAttemptFailed,
        NodeCompleted,
        NodeDispatched,
        NodeRetryScheduled,
        TimerFired,
        TimerScheduled,
    )
    from contracts.runs import (
        CancelRequested,
        RunCompleted,
        RunEndReported,
        RunOutputReady,
        RunRequested,
        RunStarted,
    )

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
                NodeRetryScheduled,
                TimerScheduled,
                ChildRunStarted,
                RunOutputReady,
                RunCompleted,
            ),
        ),
        Channel(
            name="node-results",
            address="heym.run.{run_id}.node.{invocation_id}",
            writer="executing service (agent_runtime, tool_sandbox, scheduler for child runs)",
            description=(
                "One node invocation's own history, ending with NodeCompleted or NodeAttemptFailed."
            ),
            events=(NodeCompleted, NodeAttemptFailed),
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
                "and edits, user messages, queue edits, cancellation, the ends of runs the "
                "assistant started, and its fired timers."
            ),
            events=(*CHAT_COMMAND_EVENTS, RunEndReported),
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
    )
