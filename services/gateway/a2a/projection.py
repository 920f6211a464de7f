"""The A2A task store: a read model of `heym.chat.>` that locates tasks and lists them.

One row per task (its context, owner, server, state and status time) and one per turn (the
task it belongs to). Stateless between batches: inserts do nothing when the row exists and
every state change is guarded by its event position, and a terminal state is final, so a
replayed message changes nothing. Phases: 0 contexts, 1 tasks and turns (reading contexts),
2 state changes, 3 deletions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contracts import subjects
from contracts.base import Envelope
from contracts.chat import (
    ChatCancelRequested,
    ChatConversationDeleted,
    ChatConversationStarted,
    ChatMessagePosted,
    ChatTurnCancelled,
    ChatTurnCompleted,
    ChatTurnFailed,
    ChatTurnStarted,
)
from libs.a2a import wire
from libs.projection.statements import StatementBatch

NAME = "a2a-tasks"
_FINAL = (
    "('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')"
)

_CONTEXT = """
    INSERT INTO a2a_contexts (context_id, owner_id, server_id) VALUES ($1, $2::uuid, $3)
    ON CONFLICT (context_id) DO NOTHING"""
_TASK = """
    INSERT INTO a2a_tasks (task_id, context_id, owner_id, server_id, state, status_at,
                           created_at, state_position)
    SELECT $1, c.context_id, c.owner_id, c.server_id, $3, $4, $4, $5 FROM a2a_contexts c
    WHERE c.context_id = $2 ON CONFLICT (task_id) DO NOTHING"""
_TURN = """
    INSERT INTO a2a_task_turns (turn_id, task_id) VALUES ($1, $2)
    ON CONFLICT (turn_id) DO NOTHING"""
_BY_TASK = f"""
    UPDATE a2a_tasks SET state = $2, status_at = $3, state_position = $4
    WHERE task_id = $1 AND state_position < $4 AND state NOT IN {_FINAL}"""
_BY_TURN = f"""
    UPDATE a2a_tasks t SET state = $2, status_at = $3, state_position = $4,
        message_only = t.message_only OR $5
    FROM a2a_task_turns m
    WHERE m.turn_id = $1 AND t.task_id = m.task_id AND t.state_position < $4
      AND t.state NOT IN {_FINAL}"""
_CANCEL = f"""
    UPDATE a2a_tasks SET state = '{wire.CANCELED}', status_at = $2, state_position = $3
    WHERE task_id = $1 AND state_position < $3 AND state NOT IN {_FINAL}"""
_DELETED = "UPDATE a2a_tasks SET deleted = true WHERE context_id = $1"


def end_state(ev: ChatTurnCompleted) -> str:
    if ev.message_only:
        return wire.COMPLETED
    if ev.paused_for_clarification:
        return wire.INPUT_REQUIRED
    if ev.credentials_needed:
        return wire.AUTH_REQUIRED
    return wire.COMPLETED


class TaskProjector:
    name = NAME
    filter_subjects: Sequence[str] = (subjects.ALL_CHAT_EVENTS,)

    def project(self, env: Envelope, sql: StatementBatch) -> None:
        ev = env.event
        at = env.recorded_at
        pos = env.sequence * 1000 + env.index
        if isinstance(ev, ChatConversationStarted):
            sql.add(_CONTEXT, ev.conversation_id, ev.owner_id, ev.server_id, phase=0)
        elif isinstance(ev, ChatMessagePosted) and ev.task_id:
            cid = subjects.conversation_of(env.subject)
            sql.add(_TURN, ev.message_id, ev.task_id, phase=1)
            if ev.task_id == ev.message_id:
                sql.add(_TASK, ev.task_id, cid, wire.SUBMITTED, at, pos, phase=1)
            else:
                sql.add(_BY_TASK, ev.task_id, wire.WORKING, at, pos, phase=2)
        elif isinstance(ev, ChatTurnStarted):
            self._turn(sql, ev.turn_id, wire.WORKING, at, pos)
        elif isinstance(ev, ChatTurnCompleted):
            self._turn(sql, ev.turn_id, end_state(ev), at, pos, message_only=ev.message_only)
        elif isinstance(ev, ChatTurnFailed):
            self._turn(sql, ev.turn_id, wire.REJECTED if ev.rejected else wire.FAILED, at, pos)
        elif isinstance(ev, ChatTurnCancelled):
            self._turn(sql, ev.turn_id, wire.CANCELED, at, pos)
        elif isinstance(ev, ChatCancelRequested) and ev.task_id:
            sql.add(_CANCEL, ev.task_id, at, pos, phase=2)
        elif isinstance(ev, ChatConversationDeleted):
            sql.add(_DELETED, subjects.conversation_of(env.subject), phase=3)

    def _turn(
        self,
        sql: StatementBatch,
        turn_id: str,
        state: str,
        at: Any,
        pos: int,
        *,
        message_only: bool = False,
    ) -> None:
        sql.add(_BY_TURN, turn_id, state, at, pos, message_only, phase=2)
