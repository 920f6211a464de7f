"""Writing into conversations: every command is decided on the conversation's own log (its
fold) and appended with the log's expected sequence, so two messages racing for an idle
conversation cannot both start a turn: the loser re-reads, sees the running turn, and is
queued (Chat) or refused (MCP, A2A). Shared by the Chat API and the MCP `heym_chat` tool."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from nats.aio.client import Client

from contracts import subjects
from contracts.base import Event
from contracts.chat import (
    MAX_MESSAGE_CHARS,
    BuildRequest,
    ChatConversationStarted,
    ChatMessagePosted,
)
from libs.chat import Conversation, fold_all
from libs.eventlog import ConcurrencyConflict, EventLog

MAX_TRIES = 20
MAX_ATTACHMENT_CHARS = 2_000_000
ATTACHMENT_KINDS = ("text", "image", "pdf")
LLM_CREDENTIAL_TYPES = ("openai", "custom", "google")


class ChatError(Exception):
    """A refused chat command; `status` is the HTTP status the edge answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def now_ms() -> int:
    return int(time.time() * 1000)


def conversation_id(value: str) -> str | None:
    """The canonical form of a conversation id, or None when it is not a UUID."""
    try:
        return str(uuid.UUID(str(value)))
    except (ValueError, AttributeError, TypeError):
        return None


async def erase(nc: Client, conv: Conversation) -> None:
    """After its `chat.conversation_deleted` landed: purge everything the conversation
    recorded before it from the log (the marker and anything after it stay, so the turn still
    running sees the delete). Repeatable."""
    if not conv.deleted or conv.last_seq <= 0:
        return
    await nc.jetstream().purge_stream(
        subjects.RUN_STREAM, subject=subjects.chat_all(conv.conversation_id), seq=conv.last_seq
    )


async def load(event_log: EventLog, cid: str) -> Conversation:
    return fold_all(cid, await event_log.read(subjects.chat_all(cid)))


async def owned(event_log: EventLog, cid_text: str, user_id: str) -> Conversation:
    """The user's conversation, or a 404 (another user's conversation is "not found" too)."""
    cid = conversation_id(cid_text)
    if cid is None:
        raise ChatError(f"conversation {cid_text!r} not found", 404)
    conv = await load(event_log, cid)
    if not conv.exists or conv.owner_id != user_id:
        raise ChatError(f"conversation {cid} not found", 404)
    return conv


Decision = Callable[[Conversation], Sequence[Event]]


async def command(event_log: EventLog, conv: Conversation, decide: Decision) -> Conversation:
    """Decide on the latest state and append; on a concurrent write, re-read and decide again."""
    state = conv
    for _ in range(MAX_TRIES):
        events = list(decide(state))
        if not events:
            return state
        try:
            appended = await event_log.append(
                subjects.chat_commands(state.conversation_id),
                events,
                expected_sequence=state.last_seq,
                scope=subjects.chat_all(state.conversation_id),
                correlation_id=state.conversation_id,
            )
        except ConcurrencyConflict:
            state = await load(event_log, state.conversation_id)
            continue
        for ev in events:
            state.apply(ev, appended.sequence)
        return state
    raise ChatError("the conversation is too busy; try again", 503)


async def start_conversation(
    event_log: EventLog,
    owner_id: str,
    *,
    source: str,
    title: str = "New Chat",
    server_id: str | None = None,
) -> Conversation:
    cid = str(uuid.uuid4())
    state = Conversation(cid)
    started = ChatConversationStarted(
        conversation_id=cid,
        owner_id=owner_id,
        source=source,
        title=title,
        server_id=server_id,
        started_at_ms=now_ms(),
    )
    return await command(event_log, state, lambda s: [] if s.created else [started])


@dataclass
class Message:
    """A user message, checked: what `ChatTurn` carries (Heym §12.7.1)."""

    content: str
    credential_id: str
    model: str
    attachment: dict[str, Any] | None = None
    credential_mode: str = "ask_and_create"
    build: BuildRequest | None = None
    public_base_url: str = ""


def checked_content(content: Any) -> str:
    if not isinstance(content, str) or not content.strip():
        raise ChatError("message must not be empty")
    if len(content) > MAX_MESSAGE_CHARS:
        raise ChatError(f"message is longer than {MAX_MESSAGE_CHARS:,} characters")
    return content


def checked_attachment(attachment: Any) -> dict[str, Any] | None:
    if attachment is None:
        return None
    if not isinstance(attachment, dict):
        raise ChatError("attachment must be an object {name, kind, content}")
    kind = attachment.get("kind")
    content = attachment.get("content")
    if kind not in ATTACHMENT_KINDS:
        raise ChatError(f"attachment.kind must be one of {list(ATTACHMENT_KINDS)}")
    if not isinstance(content, str) or len(content) > MAX_ATTACHMENT_CHARS:
        raise ChatError(f"attachment.content must be a string of at most {MAX_ATTACHMENT_CHARS:,}")
    return {
        "name": str(attachment.get("name") or "attachment")[:200],
        "kind": kind,
        "content": content,
    }


def built_content(content: str, attachment: dict[str, Any] | None) -> str:
    """The stored user message: attachment text inline, an image as metadata only."""
    if attachment is None:
        return content
    if attachment["kind"] == "image":
        return f"{content}\n\n[Attached image: {attachment['name']}]"
    return f"{content}\n\n[Attachment: {attachment['name']}]\n{attachment['content'][:60_000]}"


async def checked_credential(pool: asyncpg.Pool[Any], owner_id: str, credential_id: str) -> None:
    """The chat's credential must be the user's and an LLM credential (404 / 400)."""
    try:
        cid = uuid.UUID(credential_id)
    except (ValueError, AttributeError, TypeError):
        raise ChatError(f"credential {credential_id!r} not found", 404) from None
    ctype = await pool.fetchval(
        "SELECT type FROM credentials WHERE id = $1 AND owner_id = $2", cid, uuid.UUID(owner_id)
    )
    if ctype is None:
        raise ChatError(f"credential {credential_id} not found", 404)
    if ctype not in LLM_CREDENTIAL_TYPES:
        raise ChatError(f"credential {credential_id} is not an LLM credential")


def posted(message: Message, *, starts_turn: bool, timezone: str = "UTC") -> ChatMessagePosted:
    return ChatMessagePosted(
        message_id=str(uuid.uuid4()),
        content=built_content(message.content, message.attachment),
        credential_id=message.credential_id,
        model=message.model,
        attachment=message.attachment,
        credential_mode=message.credential_mode,
        build=message.build,
        starts_turn=starts_turn,
        posted_at_ms=now_ms(),
        timezone=timezone,
        public_base_url=message.public_base_url,
    )


async def post_message(
    event_log: EventLog, conv: Conversation, message: Message, *, queue_when_busy: bool
) -> tuple[Conversation, ChatMessagePosted]:
    """Start a turn with `message`, or queue it behind the running one (Chat), or refuse it
    while a turn runs (MCP, A2A). The claim is the append's expected sequence."""
    chosen: list[ChatMessagePosted] = []

    def decide(state: Conversation) -> list[Event]:
        chosen.clear()
        if state.deleted:
            raise ChatError("conversation not found", 404)
        busy = state.current is not None
        if busy and not queue_when_busy:
            raise ChatError(
                "A Heym chat turn is already running on this conversation; wait for it to "
                "finish, or use a new conversation.",
                409,
            )
        ev = posted(message, starts_turn=not busy)
        chosen.append(ev)
        return [ev]

    state = await command(event_log, conv, decide)
    return state, chosen[0]
