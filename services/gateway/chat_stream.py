"""Following a turn: its frames from the start (a late subscriber gets everything so far),
then live until the turn ends. Reads the log (any gateway replica can serve it); the live
part is an ordered consumer, so nothing between the read and the tail is missed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from contracts import subjects
from libs.chat import Conversation, step
from libs.eventlog import EventLog

PING_S = 10.0
PING: dict[str, Any] = {"type": "_ping"}


async def follow_turn(
    event_log: EventLog,
    conversation_id: str,
    *,
    turn_id: str | None = None,
    ping_s: float = PING_S,
    after_sequence: int = 0,
) -> AsyncIterator[dict[str, Any]]:
    """Frames of turn `turn_id` (default: the latest turn), ending after its `assistant_done`.
    Yields `PING` when nothing happened for `ping_s`. With no turn at all it yields nothing."""
    filter_subject = subjects.chat_all(conversation_id)
    envelopes = await event_log.read(filter_subject)
    probe = Conversation(conversation_id)
    for env in envelopes:
        probe.fold(env)
    target = probe.turn(turn_id) if turn_id else probe.last_turn
    if target is None and turn_id is None:
        return
    start = target.start_sequence if target is not None else after_sequence
    state = Conversation(conversation_id)
    for env in envelopes:
        frames = step(state, env)
        if env.sequence >= start:
            for frame in frames:
                yield frame
    wanted = target.turn_id if target is not None else turn_id
    if _ended(state, wanted):
        return
    async with event_log.tail(filter_subject, after=state.last_seq) as queue:
        while True:
            try:
                env = await asyncio.wait_for(queue.get(), ping_s)
            except TimeoutError:
                yield PING
                continue
            for frame in step(state, env):
                yield frame
            if _ended(state, wanted):
                return


def _ended(state: Conversation, turn_id: str | None) -> bool:
    turn = state.turn(turn_id) if turn_id else None
    return turn is not None and turn.ended is not None
