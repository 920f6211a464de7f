"""Tasks read from and written to the conversation log: finding a caller's task, starting or
continuing one (one append: the conversation's creation and its message go together), and
cancelling. Every write carries the conversation's expected sequence."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from contracts import subjects
from contracts.base import Envelope, Event
from contracts.chat import (
    BuildRequest,
    ChatCancelRequested,
    ChatConversationStarted,
    ChatMessagePosted,
)
from libs.a2a import Change, Task, TaskBook, wire
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.eventlog.log import Appended
from services.gateway.a2a import store
from services.gateway.a2a.jsonrpc import RpcError, invalid
from services.gateway.a2a.messages import Incoming
from services.gateway.chat_log import conversation_id, now_ms
from services.gateway.mcp.principals import Principal

MAX_TRIES = 10
_CONTEXT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
CREDENTIAL_MODE = "ask_via_link"


def context_id(value: str) -> str | None:
    """A context id: Heym's (a conversation's UUID) or one the client chose for a new
    context (A2A lets a client name it; it must be safe as a subject token)."""
    canonical = conversation_id(value)
    if canonical is not None:
        return canonical
    return value if _CONTEXT_ID.match(value) else None


def not_found(task_id: str) -> RpcError:
    return RpcError(wire.TASK_NOT_FOUND, "Task not found", metadata={"taskId": task_id[:256]})


async def load_book(event_log: EventLog, context_id: str) -> TaskBook:
    return TaskBook(context_id).fold_all(await event_log.read(subjects.chat_all(context_id)))


async def find(
    pool: Any, event_log: EventLog, principal: Principal, task_id: str, context: str | None = None
) -> tuple[TaskBook, Task]:
    """The caller's task (another user's or another server's is not found). With the task's
    context known (a message naming both), the log answers without the task store."""
    cid = context_id(context) if context else None
    if cid is not None:
        book = await load_book(event_log, cid)
        task = book.tasks.get(task_id)
        if (
            task is not None
            and not task.message_only
            and book.conversation.exists
            and book.owner_id == principal.user_id
            and book.server_id == principal.server_id
        ):
            return book, task
    row = await store.locate(pool, principal, task_id)
    if row is None and await store.caught_up(pool, event_log):
        row = await store.locate(pool, principal, task_id)  # it was just created
    if row is None:
        raise not_found(task_id)
    book = await load_book(event_log, row.context_id)
    task = book.tasks.get(task_id)
    if task is None or task.message_only or book.conversation.deleted:
        raise not_found(task_id)
    return book, task


@dataclass
class Posted:
    book: TaskBook
    task: Task
    turn_id: str
    sequence: int
    changes: list[Change]


def _envelopes(appended: Appended, events: list[Event]) -> list[Envelope]:
    now = datetime.now(UTC)
    return [
        Envelope(
            event_id=f"{appended.message_id}:{i}",
            run_id="",
            subject=appended.subject,
            sequence=appended.sequence,
            index=i,
            recorded_at=now,
            correlation_id=None,
            causation_id=None,
            traceparent=None,
            event=ev,
        )
        for i, ev in enumerate(events)
    ]


def _message(
    incoming: Incoming, task_id: str | None, credential_id: str, model: str
) -> ChatMessagePosted:
    turn_id = str(uuid.uuid4())
    return ChatMessagePosted(
        message_id=turn_id,
        content=incoming.content,
        credential_id=credential_id,
        model=model,
        credential_mode=CREDENTIAL_MODE,
        build=BuildRequest(),
        starts_turn=True,
        posted_at_ms=now_ms(),
        task_id=task_id or turn_id,
        a2a_message=incoming.received,
    )


@dataclass
class Target:
    """Where a message goes: a new context, an existing one, or a task waiting for input."""

    book: TaskBook
    task_id: str | None = None


async def target(
    pool: Any, event_log: EventLog, principal: Principal, incoming: Incoming
) -> Target:
    if incoming.task_id is not None:
        book, task = await find(pool, event_log, principal, incoming.task_id, incoming.context_id)
        if incoming.context_id is not None and incoming.context_id != task.context_id:
            raise invalid("message.contextId does not match the task's context", "contextId")
        return Target(book, task.task_id)
    if incoming.context_id is None:
        return Target(TaskBook(str(uuid.uuid4())))
    cid = context_id(incoming.context_id)
    if cid is None:
        raise invalid("message.contextId must be 1-128 letters, digits, '-' or '_' (a context id)")
    book = await load_book(event_log, cid)
    created = book.conversation.created
    if created is not None and (
        created.owner_id != principal.user_id
        or created.server_id != principal.server_id
        or book.conversation.deleted
    ):
        raise invalid("message.contextId is not a context of yours on this server")
    return Target(book)


async def post(
    event_log: EventLog,
    principal: Principal,
    to: Target,
    incoming: Incoming,
    *,
    credential_id: str,
    model: str,
) -> Posted:
    """Start a task (in a new or an existing context) or continue one waiting for input."""
    return await _append(event_log, to.book, incoming, to.task_id, credential_id, model, principal)


async def _append(
    event_log: EventLog,
    book: TaskBook,
    incoming: Incoming,
    task_id: str | None,
    credential_id: str,
    model: str,
    principal: Principal | None = None,
) -> Posted:
    for _ in range(MAX_TRIES):
        conv = book.conversation
        if task_id is not None:
            task = book.tasks[task_id]
            if task.terminal:
                raise RpcError(
                    wire.UNSUPPORTED_OPERATION,
                    f"the task is {task.state}: it takes no more messages; start a new task",
                    metadata={"taskId": task_id},
                )
            if not task.interrupted:
                raise RpcError(
                    wire.UNSUPPORTED_OPERATION,
                    "the task is still working: wait for it, or cancel it",
                    metadata={"taskId": task_id},
                )
        if conv.current is not None:
            raise RpcError(
                wire.UNSUPPORTED_OPERATION,
                "a task is still working on this context: wait for it, or cancel it",
            )
        message = _message(incoming, task_id, credential_id, model)
        events: list[Event] = [message]
        if conv.created is None:
            assert principal is not None
            events.insert(
                0,
                ChatConversationStarted(
                    conversation_id=book.context_id,
                    owner_id=principal.user_id,
                    source="a2a",
                    title="New Chat",
                    server_id=principal.server_id,
                    started_at_ms=now_ms(),
                ),
            )
        try:
            appended = await event_log.append(
                subjects.chat_commands(book.context_id),
                events,
                expected_sequence=conv.last_seq,
                scope=subjects.chat_all(book.context_id),
                correlation_id=book.context_id,
            )
        except ConcurrencyConflict:
            fresh = await load_book(event_log, book.context_id)
            created = fresh.conversation.created
            if (
                principal is not None
                and created is not None
                and (
                    created.owner_id != principal.user_id
                    or created.server_id != principal.server_id
                )
            ):
                raise invalid(
                    "message.contextId is not a context of yours on this server"
                ) from None
            book = fresh
            continue
        changes: list[Change] = []
        for env in _envelopes(appended, events):
            changes.extend(book.fold(env))
        task = book.tasks[message.task_id]
        return Posted(book, task, message.message_id, appended.sequence, changes)
    raise RpcError(wire.INTERNAL_ERROR, "the context is too busy; try again")


async def cancel(event_log: EventLog, book: TaskBook, task: Task) -> TaskBook:
    """Record the cancel (a waiting task is cancelled by it; a running turn is interrupted on
    whichever replica runs it and ends cancelled) and return the task as the log has it."""
    for _ in range(MAX_TRIES):
        if task.terminal:
            if task.state == wire.CANCELED:
                return book  # idempotent
            raise RpcError(
                wire.TASK_NOT_CANCELABLE,
                f"the task is {task.state} and cannot be canceled",
                metadata={"taskId": task.task_id},
            )
        ev = ChatCancelRequested(
            turn_id=task.current_turn,
            reason="canceled by the A2A client",
            requested_at_ms=now_ms(),
            task_id=task.task_id,
        )
        try:
            appended = await event_log.append(
                subjects.chat_commands(book.context_id),
                [ev],
                expected_sequence=book.conversation.last_seq,
                scope=subjects.chat_all(book.context_id),
                correlation_id=book.context_id,
            )
        except ConcurrencyConflict:
            book = await load_book(event_log, book.context_id)
            task = book.tasks[task.task_id]
            continue
        for env in _envelopes(appended, [ev]):
            book.fold(env)
        return book
    raise RpcError(wire.INTERNAL_ERROR, "the context is too busy; try again")
