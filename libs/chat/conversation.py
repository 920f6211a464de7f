"""`Conversation`: one conversation with the Heym Agent as a pure fold of its events.

Shared by the gateway (claiming a turn, queueing, streaming) and the assistant (deciding the
next step), so both read a conversation the same way. Only `apply` changes the state; it
ignores events that do not fit (a turn id that is not the running turn's), so a fold never
fails on a log it did not write.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec

from contracts.base import Envelope, UnknownEvent
from contracts.chat import (
    ChatArtifactRecorded,
    ChatCancelRequested,
    ChatContextCompressed,
    ChatConversationDeleted,
    ChatConversationEdited,
    ChatConversationRead,
    ChatConversationStarted,
    ChatMessagePosted,
    ChatQueuedMessageDeleted,
    ChatQueuedMessageEdited,
    ChatQueuedMessageStarted,
    ChatRoundRecorded,
    ChatTimerFired,
    ChatToolChecked,
    ChatToolFinished,
    ChatToolStarted,
    ChatTurnCancelled,
    ChatTurnCompleted,
    ChatTurnFailed,
    ChatTurnStarted,
    TurnEnd,
)
from contracts.runs import RunEndReported, RunPauseReported

DEFAULT_TITLE = "New Chat"
TITLE_CHARS = 50


@dataclass
class ToolCall:
    """One tool call of a model round, as the model asked for it and as it went."""

    call_id: str
    name: str
    arguments: str
    started: ChatToolStarted | None = None
    checks: list[ChatToolChecked] = field(default_factory=list)
    finished: ChatToolFinished | None = None

    @property
    def args(self) -> dict[str, Any]:
        """The arguments as an object; arguments that do not parse become `{}` (Heym)."""
        if self.started is not None:
            return dict(self.started.args)
        return parse_arguments(self.arguments)


@dataclass
class Round:
    recorded: ChatRoundRecorded
    calls: list[ToolCall]

    @property
    def number(self) -> int:
        return self.recorded.round

    def open_calls(self) -> list[ToolCall]:
        return [c for c in self.calls if c.finished is None]


@dataclass
class Turn:
    """One user message and the assistant's work on it (an A2A task)."""

    message: ChatMessagePosted
    start_sequence: int
    started: ChatTurnStarted | None = None
    rounds: list[Round] = field(default_factory=list)
    # Keyed by the round about to be asked when the compression happened.
    compressions: dict[int, ChatContextCompressed] = field(default_factory=dict)
    cancel: ChatCancelRequested | None = None
    artifacts: list[ChatArtifactRecorded] = field(default_factory=list)
    ended: TurnEnd | None = None
    end_sequence: int = 0

    @property
    def turn_id(self) -> str:
        return self.message.message_id

    @property
    def running(self) -> bool:
        return self.ended is None

    def calls(self) -> list[ToolCall]:
        return [c for r in self.rounds for c in r.calls]

    def call(self, call_id: str) -> ToolCall | None:
        return next((c for c in self.calls() if c.call_id == call_id), None)


@dataclass
class Conversation:
    conversation_id: str
    created: ChatConversationStarted | None = None
    title: str = DEFAULT_TITLE
    titled: bool = False
    is_pinned: bool = False
    has_unread: bool = False
    deleted: bool = False
    messages: dict[str, ChatMessagePosted] = field(default_factory=dict)
    queue: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    paused_by: str | None = None
    run_ends: dict[str, RunEndReported] = field(default_factory=dict)
    # runs paused for a human review (the latest pause of each)
    run_pauses: dict[str, RunPauseReported] = field(default_factory=dict)
    timers_fired: set[str] = field(default_factory=set)
    last_seq: int = 0

    # -- reading -------------------------------------------------------------------------
    @property
    def exists(self) -> bool:
        return self.created is not None and not self.deleted

    @property
    def owner_id(self) -> str:
        return self.created.owner_id if self.created else ""

    @property
    def source(self) -> str:
        return self.created.source if self.created else "chat"

    @property
    def current(self) -> Turn | None:
        """The running turn, if any (one at a time)."""
        last = self.turns[-1] if self.turns else None
        return last if last is not None and last.running else None

    @property
    def last_turn(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def queued(self) -> list[ChatMessagePosted]:
        return [self.messages[m] for m in self.queue if m in self.messages]

    def turn(self, turn_id: str) -> Turn | None:
        return next((t for t in reversed(self.turns) if t.turn_id == turn_id), None)

    # -- folding -------------------------------------------------------------------------
    def fold(self, env: Envelope) -> None:
        self.apply(env.event, env.sequence)

    def apply(self, ev: object, sequence: int) -> None:
        self.last_seq = max(self.last_seq, sequence)
        if isinstance(ev, UnknownEvent):
            return
        if isinstance(ev, ChatConversationStarted):
            if self.created is None:
                self.created = ev
                self.title = ev.title or DEFAULT_TITLE
                self.titled = self.title != DEFAULT_TITLE
        elif isinstance(ev, ChatConversationEdited):
            if ev.title is not None:
                self.title = ev.title
                self.titled = True
            if ev.is_pinned is not None:
                self.is_pinned = ev.is_pinned
        elif isinstance(ev, ChatConversationRead):
            self.has_unread = False
        elif isinstance(ev, ChatConversationDeleted):
            self.deleted = True
        elif isinstance(ev, ChatMessagePosted):
            self._posted(ev, sequence)
        elif isinstance(ev, ChatQueuedMessageStarted):
            if ev.message_id in self.queue and self.current is None:
                self.queue.remove(ev.message_id)
                self.turns.append(Turn(self.messages[ev.message_id], start_sequence=sequence))
        elif isinstance(ev, ChatQueuedMessageEdited):
            old = self.messages.get(ev.message_id)
            if old is not None and ev.message_id in self.queue:
                self.messages[ev.message_id] = _with_content(old, ev.content)
        elif isinstance(ev, ChatQueuedMessageDeleted):
            if ev.message_id in self.queue:
                self.queue.remove(ev.message_id)
        elif isinstance(ev, ChatCancelRequested):
            current = self.current
            if current is not None and current.turn_id == ev.turn_id and current.cancel is None:
                current.cancel = ev
                self.queue.clear()
        elif isinstance(ev, RunEndReported):
            self.run_ends.setdefault(ev.run_id, ev)
        elif isinstance(ev, RunPauseReported):
            self.run_pauses[ev.run_id] = ev
        elif isinstance(ev, ChatTimerFired):
            self.timers_fired.add(ev.timer_id)
        else:
            self._turn_event(ev, sequence)

    def _posted(self, ev: ChatMessagePosted, sequence: int) -> None:
        if ev.message_id in self.messages:
            return
        self.messages[ev.message_id] = ev
        if ev.starts_turn and self.current is None:
            self.paused_by = None
            self.turns.append(Turn(ev, start_sequence=sequence))
        else:
            self.queue.append(ev.message_id)

    def _turn_event(self, ev: object, sequence: int) -> None:
        turn_id = getattr(ev, "turn_id", None)
        current = self.current
        if current is None or turn_id != current.turn_id:
            return
        if isinstance(ev, ChatTurnStarted):
            current.started = ev
        elif isinstance(ev, ChatRoundRecorded):
            calls = [
                ToolCall(
                    call_id=str(c.get("id") or ""),
                    name=str((c.get("function") or {}).get("name") or ""),
                    arguments=str((c.get("function") or {}).get("arguments") or ""),
                )
                for c in ev.message.get("tool_calls") or []
                if isinstance(c, dict)
            ]
            current.rounds.append(Round(recorded=ev, calls=calls))
        elif isinstance(ev, ChatToolStarted):
            call = current.call(ev.tool_call_id)
            if call is not None and call.started is None:
                call.started = ev
        elif isinstance(ev, ChatToolChecked):
            call = current.call(ev.tool_call_id)
            if call is not None and call.finished is None:
                call.checks.append(ev)
        elif isinstance(ev, ChatToolFinished):
            call = current.call(ev.tool_call_id)
            if call is not None and call.finished is None:
                call.finished = ev
        elif isinstance(ev, ChatContextCompressed):
            current.compressions[ev.round] = ev
        elif isinstance(ev, ChatArtifactRecorded):
            current.artifacts.append(ev)
        elif isinstance(ev, ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled):
            current.ended = ev
            current.end_sequence = sequence
            self.has_unread = True
            if not self.titled:
                # The first turn names the conversation after its message (Heym's fallback).
                self.title = fallback_title(self.turns[0].message.content)
                self.titled = True
            if isinstance(ev, ChatTurnCompleted) and ev.paused_for_clarification:
                self.paused_by = ev.turn_id


def fallback_title(content: str) -> str:
    """The first 50 characters of the first message, cut at a word boundary, plus "..."."""
    flat = " ".join(content.split())
    if len(flat) <= TITLE_CHARS:
        return flat or DEFAULT_TITLE
    cut = flat[:TITLE_CHARS]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "..."


def parse_arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _with_content(message: ChatMessagePosted, content: str) -> ChatMessagePosted:
    return msgspec.structs.replace(message, content=content)


def fold_all(conversation_id: str, envelopes: list[Envelope]) -> Conversation:
    state = Conversation(conversation_id)
    for env in envelopes:
        state.fold(env)
    return state
