"""The chat read models, projected from `heym.chat.>`: conversations, messages (with their
tool calls), the queue, one history row per turn, and the assistant's LLM traces.

Stateless between batches: each statement is idempotent on its own (inserts that do nothing
when the row exists, updates guarded by event position), so a replayed message changes
nothing. Phases order a batch's statements: 0 conversations, 1 direct inserts, 2 queue
edits, 3 inserts that read other rows, 4 updates, 5 deletes (see `StatementBatch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contracts import subjects
from contracts.base import Envelope
from contracts.chat import (
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
    ChatToolFinished,
    ChatToolStarted,
    ChatTurnCancelled,
    ChatTurnCompleted,
    ChatTurnFailed,
)
from libs.chat import assistant_message_id, display_args, fallback_title, stored_text
from libs.eventlog.log import utc_from_ms
from libs.projection.statements import StatementBatch

_CONVERSATION = """
    INSERT INTO chat_conversations (id, owner_id, title, source, server_id, titled, created_at,
                                    updated_at, last_sequence)
    VALUES ($1, $2::uuid, $3, $4, $5, $6, $7, $7, $8) ON CONFLICT (id) DO NOTHING"""
_META = """
    UPDATE chat_conversations SET title = COALESCE($2, title),
        titled = titled OR $2 IS NOT NULL, is_pinned = COALESCE($3, is_pinned),
        meta_position = $4, updated_at = $5
    WHERE id = $1 AND meta_position < $4"""
_FALLBACK_TITLE = """
    UPDATE chat_conversations SET title = $2, titled = true WHERE id = $1 AND NOT titled"""
_READ = "UPDATE chat_conversations SET has_unread = false WHERE id = $1"
_DELETED = "UPDATE chat_conversations SET deleted = true, is_running = false WHERE id = $1"
# A deleted conversation keeps a tombstone row (no title); what was said in it goes, as the log
# purges it (`services/gateway/chat_log.erase`). Last phase: nothing of it follows the delete.
_ERASED = (
    "UPDATE chat_conversations SET title = '' WHERE id = $1",
    "DELETE FROM chat_messages WHERE conversation_id = $1",
    "DELETE FROM chat_queue_items WHERE conversation_id = $1",
    "DELETE FROM chat_tool_calls WHERE conversation_id = $1",
    "DELETE FROM chat_turns WHERE conversation_id = $1",
)
_USER_MESSAGE = """
    INSERT INTO chat_messages (id, conversation_id, role, content, created_at, sequence)
    VALUES ($1, $2, 'user', $3, $4, $5) ON CONFLICT (id) DO NOTHING"""
_TURN = """
    INSERT INTO chat_turns (turn_id, conversation_id, owner_id, status, content, started_at,
                            sequence)
    SELECT $1, c.id, c.owner_id, 'running', $3, $4, $5 FROM chat_conversations c
    WHERE c.id = $2 ON CONFLICT (turn_id) DO NOTHING"""
_RUNNING = """
    UPDATE chat_conversations SET is_running = true, running_turn_id = $2, last_turn_id = $2,
        last_turn_sequence = $3, last_credential_id = $4, last_model = $5,
        queue_paused_by_message_id = NULL, state_position = $6, updated_at = $7,
        last_sequence = GREATEST(last_sequence, $3)
    WHERE id = $1 AND state_position < $6"""
_QUEUED = """
    INSERT INTO chat_queue_items (id, conversation_id, content, credential_id, model, attachment,
                                  created_at, updated_at, sequence)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8) ON CONFLICT (id) DO NOTHING"""
_QUEUE_EDIT = "UPDATE chat_queue_items SET content = $2, updated_at = $3 WHERE id = $1"
_QUEUE_TO_MESSAGE = """
    INSERT INTO chat_messages (id, conversation_id, role, content, created_at, sequence)
    SELECT q.id, q.conversation_id, 'user', q.content, $2, $3 FROM chat_queue_items q
    WHERE q.id = $1 ON CONFLICT (id) DO NOTHING"""
_QUEUE_TO_TURN = """
    INSERT INTO chat_turns (turn_id, conversation_id, owner_id, status, content, started_at,
                            sequence)
    SELECT q.id, q.conversation_id, c.owner_id, 'running', q.content, $2, $3
    FROM chat_queue_items q JOIN chat_conversations c ON c.id = q.conversation_id
    WHERE q.id = $1 ON CONFLICT (turn_id) DO NOTHING"""
_QUEUE_RUNNING = """
    UPDATE chat_conversations c SET is_running = true, running_turn_id = q.id,
        last_turn_id = q.id, last_turn_sequence = $3, last_credential_id = q.credential_id,
        last_model = q.model, queue_paused_by_message_id = NULL, state_position = $4,
        updated_at = $5, last_sequence = GREATEST(c.last_sequence, $3)
    FROM chat_queue_items q WHERE c.id = $1 AND q.id = $2 AND c.state_position < $4"""
_UNQUEUE = "DELETE FROM chat_queue_items WHERE id = $1"
_CLEAR_QUEUE = "DELETE FROM chat_queue_items WHERE conversation_id = $1 AND sequence < $2"
_TRACE = """
    INSERT INTO llm_traces (id, owner_id, run_id, invocation_id, credential_id, source,
                            request_type, model, request, response, prompt_tokens,
                            completion_tokens, total_tokens, elapsed_ms, created_at, sequence,
                            session_id)
    SELECT $1, c.owner_id::text, c.id, $3, c.last_credential_id, 'dashboard_chat', $4, $5, $6,
           $7, $8, $9, $10, $11, $12, $13, c.id
    FROM chat_conversations c WHERE c.id = $2 ON CONFLICT (id) DO NOTHING"""
_TOOL = """
    INSERT INTO chat_tool_calls (turn_id, id, conversation_id, name, label, args, status,
                                 response_summary, elapsed_ms, sequence)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (turn_id, id) DO NOTHING"""
_TOOL_DONE = """
    UPDATE chat_tool_calls SET status = $3, response_summary = $4, elapsed_ms = $5
    WHERE turn_id = $1 AND id = $2"""
_TOOLS_CANCELLED = """
    UPDATE chat_tool_calls SET status = 'cancelled', response_summary = 'Cancelled'
    WHERE turn_id = $1 AND status = 'running'"""
_ASSISTANT_MESSAGE = """
    INSERT INTO chat_messages (id, conversation_id, role, content, status, created_at, sequence)
    VALUES ($1, $2, 'assistant', $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING"""
_TURN_END = """
    UPDATE chat_turns SET status = $2, reply = $3, finished_at = $4,
        execution_time_ms = EXTRACT(EPOCH FROM ($4 - started_at)) * 1000,
        tool_names = (SELECT COALESCE(jsonb_agg(DISTINCT t.name), '[]'::jsonb)
                      FROM chat_tool_calls t WHERE t.turn_id = $1)
    WHERE turn_id = $1"""
_UNREAD = "UPDATE chat_conversations SET has_unread = true WHERE id = $1"
_IDLE = """
    UPDATE chat_conversations SET is_running = false, running_turn_id = NULL,
        queue_paused_by_message_id = $2, state_position = $3, updated_at = $4,
        last_sequence = GREATEST(last_sequence, $5)
    WHERE id = $1 AND state_position < $3"""


def _position(env: Envelope) -> int:
    return env.sequence * 1000 + env.index


class ChatProjector:
    name = "agent_runtime-chats"
    filter_subjects: Sequence[str] = (subjects.ALL_CHAT_EVENTS,)

    def project(self, env: Envelope, sql: StatementBatch) -> None:
        ev = env.event
        conv = env.subject.split(".")[2]
        at = env.recorded_at
        if isinstance(ev, ChatConversationStarted):
            titled = bool(ev.title) and ev.title != "New Chat"
            sql.add(
                _CONVERSATION,
                conv,
                ev.owner_id,
                ev.title or "New Chat",
                ev.source,
                ev.server_id,
                titled,
                at,
                env.sequence,
                phase=0,
            )
        elif isinstance(ev, ChatConversationEdited):
            sql.add(_META, conv, ev.title, ev.is_pinned, _position(env), at, phase=4)
        elif isinstance(ev, ChatConversationRead):
            sql.add(_READ, conv, phase=4)
        elif isinstance(ev, ChatConversationDeleted):
            sql.add(_DELETED, conv, phase=4)
            for statement in _ERASED:
                sql.add(statement, conv, phase=6)
        elif isinstance(ev, ChatMessagePosted):
            self._posted(env, ev, conv, sql)
        elif isinstance(ev, ChatQueuedMessageStarted):
            sql.add(_QUEUE_TO_MESSAGE, ev.message_id, at, _position(env), phase=3)
            sql.add(_QUEUE_TO_TURN, ev.message_id, at, env.sequence, phase=3)
            sql.add(_QUEUE_RUNNING, conv, ev.message_id, env.sequence, _position(env), at, phase=4)
            sql.add(_UNQUEUE, ev.message_id, phase=5)
        elif isinstance(ev, ChatQueuedMessageEdited):
            sql.add(_QUEUE_EDIT, ev.message_id, ev.content, at, phase=2)
        elif isinstance(ev, ChatQueuedMessageDeleted):
            sql.add(_UNQUEUE, ev.message_id, phase=5)
        elif isinstance(ev, ChatCancelRequested):
            sql.add(_CLEAR_QUEUE, conv, env.sequence, phase=5)
        elif isinstance(ev, ChatRoundRecorded):
            self._trace(env, conv, ev, sql)
        elif isinstance(ev, ChatToolStarted):
            sql.add(
                _TOOL,
                ev.turn_id,
                ev.tool_call_id,
                conv,
                ev.name,
                ev.label,
                display_args(ev.name, ev.args),
                "running",
                "",
                0.0,
                env.sequence,
                phase=3,
            )
        elif isinstance(ev, ChatToolFinished):
            sql.add(
                _TOOL_DONE,
                ev.turn_id,
                ev.tool_call_id,
                ev.status,
                ev.response_summary,
                ev.elapsed_ms,
                phase=4,
            )
        elif isinstance(ev, ChatContextCompressed):
            self._compression(env, conv, ev, sql)
        elif isinstance(ev, ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled):
            self._ended(env, conv, ev, sql)

    def _posted(self, env: Envelope, ev: ChatMessagePosted, conv: str, sql: StatementBatch) -> None:
        at = env.recorded_at
        sql.add(_FALLBACK_TITLE, conv, fallback_title(ev.content), phase=4)
        if not ev.starts_turn:
            attachment = _attachment_meta(ev.attachment)
            sql.add(
                _QUEUED,
                ev.message_id,
                conv,
                ev.content,
                ev.credential_id or None,
                ev.model or None,
                attachment,
                at,
                env.sequence,
                phase=1,
            )
            return
        sql.add(_USER_MESSAGE, ev.message_id, conv, ev.content, at, _position(env), phase=1)
        sql.add(_TURN, ev.message_id, conv, ev.content, at, env.sequence, phase=1)
        sql.add(
            _RUNNING,
            conv,
            ev.message_id,
            env.sequence,
            ev.credential_id or None,
            ev.model or None,
            _position(env),
            at,
            phase=4,
        )

    def _trace(self, env: Envelope, conv: str, ev: ChatRoundRecorded, sql: StatementBatch) -> None:
        request = ev.trace.get("request", {}) if ev.trace else {}
        response = ev.trace.get("response", {}) if ev.trace else {}
        sql.add(
            _TRACE,
            env.event_id,
            conv,
            ev.turn_id,
            "chat.completions",
            ev.model,
            request,
            response,
            ev.usage.get("prompt_tokens", 0),
            ev.usage.get("completion_tokens", 0),
            ev.usage.get("total_tokens", 0),
            ev.elapsed_ms,
            env.recorded_at,
            env.sequence,
            phase=3,
        )

    def _compression(
        self, env: Envelope, conv: str, ev: ChatContextCompressed, sql: StatementBatch
    ) -> None:
        sql.add(
            _TOOL,
            ev.turn_id,
            f"compression-{ev.round}",
            conv,
            "_context_compression",
            "Compressing the conversation...",
            {"messages_compressed": ev.messages_compressed},
            "success",
            f"{ev.tokens_before} -> {ev.tokens_after} tokens",
            ev.elapsed_ms,
            env.sequence,
            phase=3,
        )
        sql.add(
            _TRACE,
            env.event_id,
            conv,
            ev.turn_id,
            "context.compression",
            "",
            {
                "messages_before": ev.messages_before_count,
                "tokens_estimated_before": ev.tokens_before,
            },
            {"messages_after": ev.messages_after_count, "tokens_estimated_after": ev.tokens_after},
            0,
            0,
            0,
            ev.elapsed_ms,
            env.recorded_at,
            env.sequence,
            phase=3,
        )

    def _ended(
        self,
        env: Envelope,
        conv: str,
        ev: ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled,
        sql: StatementBatch,
    ) -> None:
        at = env.recorded_at
        finished = utc_from_ms(ev.finished_at_ms) if ev.finished_at_ms else at
        paused: str | None = None
        if isinstance(ev, ChatTurnCompleted):
            content, status, turn_status = stored_text(ev.text, ev.markers), "done", "success"
            paused = ev.turn_id if ev.paused_for_clarification else None
        elif isinstance(ev, ChatTurnFailed):
            content = ev.partial_text or f"Error: {ev.error}"
            status = turn_status = "error"
        else:
            content, status, turn_status = ev.partial_text, "cancelled", "cancelled"
            sql.add(_TOOLS_CANCELLED, ev.turn_id, phase=4)
        sql.add(
            _ASSISTANT_MESSAGE,
            assistant_message_id(ev.turn_id),
            conv,
            content,
            status,
            at,
            _position(env),
            phase=3,
        )
        sql.add(_TURN_END, ev.turn_id, turn_status, content[:20_000], finished, phase=4)
        sql.add(_IDLE, conv, paused, _position(env), at, env.sequence, phase=4)
        sql.add(_UNREAD, conv, phase=4)


def _attachment_meta(attachment: dict[str, Any] | None) -> dict[str, Any] | None:
    if not attachment:
        return None
    return {"name": attachment.get("name"), "kind": attachment.get("kind")}
