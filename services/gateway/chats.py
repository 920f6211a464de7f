"""`/api/chats`: conversations with the Heym Agent (Heym §12.6).

Writes are commands appended to the conversation's log (`chat_log.py`); the assistant in the
agent runtime reacts to them. Reads come from the chat read models; a conversation created a
moment ago that the projection has not reached yet is read from its log.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from litestar import Controller, Request, Response, delete, get, patch, post, put
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from contracts.chat import (
    BuildRequest,
    ChatCancelRequested,
    ChatConversationDeleted,
    ChatConversationEdited,
    ChatConversationRead,
    ChatQueuedMessageDeleted,
    ChatQueuedMessageEdited,
)
from libs.accounts import AccountUser
from libs.chat import Conversation, fallback_title, queued_message
from services.gateway import chat_log
from services.gateway.auth import required_user
from services.gateway.bodies import json_body, json_object
from services.gateway.chat_log import ChatError, Message
from services.gateway.chat_read import conversation_detail, conversation_json, list_conversations
from services.gateway.chat_stream import PING, follow_turn
from services.gateway.review_links import public_base_url

MAX_QUICK_PROMPTS = 7
MAX_QUICK_PROMPT_CHARS = 200
DEFAULT_QUICK_PROMPTS = [
    "List my workflows",
    "What ran in the last 24 hours?",
    "Which workflows are running now?",
    "Show my error rate this week",
    "Build a workflow that summarises a web page",
    "How do I call a workflow over MCP?",
    "Run my most recent workflow",
]


def _fail(exc: ChatError) -> HTTPException:
    return HTTPException(status_code=exc.status, detail=str(exc))


async def _owned(request: Request[Any, Any, State], cid: str, user: AccountUser) -> Conversation:
    try:
        return await chat_log.owned(request.app.state.ctx.event_log, cid, user.id)
    except ChatError as exc:
        raise _fail(exc) from None


async def _command(
    request: Request[Any, Any, State], conv: Conversation, decide: Any
) -> Conversation:
    try:
        return await chat_log.command(request.app.state.ctx.event_log, conv, decide)
    except ChatError as exc:
        raise _fail(exc) from None


async def _delete(request: Request[Any, Any, State], conv: Conversation) -> None:
    """Record the delete (it stops a running turn), then erase what was said from the log."""
    conv = await _command(
        request,
        conv,
        lambda s: [] if s.deleted else [ChatConversationDeleted(deleted_at_ms=chat_log.now_ms())],
    )
    await chat_log.erase(request.app.state.ctx.nc, conv)


async def preferred_model(
    request: Request[Any, Any, State], user_id: str
) -> tuple[str | None, str | None]:
    row = await request.app.state.ctx.pool.fetchrow(
        """SELECT preferred_credential_id, preferred_model FROM assistant_settings
           WHERE user_id = $1""",
        uuid.UUID(user_id),
    )
    if row is None:
        return None, None
    cred = str(row["preferred_credential_id"]) if row["preferred_credential_id"] else None
    return cred, row["preferred_model"]


async def checked_message(
    request: Request[Any, Any, State], user: AccountUser, body: dict[str, Any]
) -> Message:
    unknown = set(body) - {"content", "credential_id", "model", "attachment", "build"}
    if unknown:
        raise ChatError(f"unknown fields: {sorted(unknown)}")
    content = chat_log.checked_content(body.get("content"))
    attachment = chat_log.checked_attachment(body.get("attachment"))
    credential_id, model = body.get("credential_id"), body.get("model")
    if not credential_id or not model:
        pref_cred, pref_model = await preferred_model(request, user.id)
        credential_id = credential_id or pref_cred
        model = model or (pref_model if credential_id == pref_cred else None)
    if not isinstance(credential_id, str) or not credential_id:
        raise ChatError("credential_id is required (an LLM credential of yours)")
    if not isinstance(model, str) or not model.strip():
        raise ChatError("model is required")
    await chat_log.checked_credential(request.app.state.ctx.pool, user.id, credential_id)
    build = body.get("build")
    build_request = None
    if build is not None:
        if not isinstance(build, dict):
            raise ChatError("build must be an object {target_workflow_id?}")
        target = build.get("target_workflow_id")
        build_request = BuildRequest(target_workflow_id=str(target) if target else None)
    return Message(
        content=content,
        credential_id=credential_id,
        model=model.strip(),
        attachment=attachment,
        build=build_request,
        public_base_url=public_base_url(request),
    )


class ChatController(Controller):
    path = "/api/chats"
    tags = ["chat"]
    dependencies = {"user": Provide(required_user)}

    @get("", summary="Your conversations with the Heym Agent, pinned and newest first")
    async def list_all(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> list[dict[str, Any]]:
        return await list_conversations(request.app.state.ctx.pool, user.id)

    @post("", summary="Start a conversation", status_code=201)
    async def create(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        body = await json_body(request, empty={})
        if not isinstance(body, dict):
            raise HTTPException(status_code=400, detail="the request body must be a JSON object")
        title = body.get("title") or "New Chat"
        if not isinstance(title, str) or len(title) > 200:
            raise HTTPException(status_code=400, detail="title must be a string (max 200)")
        conv = await chat_log.start_conversation(
            request.app.state.ctx.event_log, user.id, source="chat", title=title
        )
        return conversation_json(conv)

    @delete("", summary="Delete all your conversations", status_code=204)
    async def delete_all(self, request: Request[Any, Any, State], user: AccountUser) -> None:
        for item in await list_conversations(request.app.state.ctx.pool, user.id):
            await _delete(request, await _owned(request, item["id"], user))

    @get("/quick-prompts", summary="Your quick prompts")
    async def quick_prompts(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> dict[str, Any]:
        value = await request.app.state.ctx.pool.fetchval(
            "SELECT quick_prompts FROM assistant_settings WHERE user_id = $1", uuid.UUID(user.id)
        )
        return {"prompts": value if isinstance(value, list) else DEFAULT_QUICK_PROMPTS}

    @put("/quick-prompts", summary="Replace your quick prompts (at most 7, 200 characters each)")
    async def set_quick_prompts(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> dict[str, Any]:
        prompts = (await json_object(request)).get("prompts")
        if (
            not isinstance(prompts, list)
            or len(prompts) > MAX_QUICK_PROMPTS
            or not all(
                isinstance(p, str) and 0 < len(p.strip()) <= MAX_QUICK_PROMPT_CHARS for p in prompts
            )
        ):
            raise HTTPException(
                status_code=400,
                detail=f"prompts must be a list of at most {MAX_QUICK_PROMPTS} non-empty strings "
                f"of at most {MAX_QUICK_PROMPT_CHARS} characters",
            )
        await request.app.state.ctx.pool.execute(
            """INSERT INTO assistant_settings (user_id, quick_prompts) VALUES ($1, $2)
               ON CONFLICT (user_id) DO UPDATE SET quick_prompts = $2, updated_at = now()""",
            uuid.UUID(user.id),
            prompts,
        )
        return {"prompts": prompts}

    @get("/{conversation_id:str}", summary="One conversation with its messages and queue")
    async def read(
        self, request: Request[Any, Any, State], conversation_id: str, user: AccountUser
    ) -> dict[str, Any]:
        conv = await _owned(request, conversation_id, user)
        found = await conversation_detail(request.app.state.ctx.pool, conv.conversation_id, user.id)
        return found if found is not None else conversation_json(conv)

    @put("/{conversation_id:str}", summary="Rename or pin a conversation")
    async def update(
        self, request: Request[Any, Any, State], conversation_id: str, user: AccountUser
    ) -> dict[str, Any]:
        body = await json_object(request)
        title, pinned = body.get("title"), body.get("is_pinned")
        if title is not None and (
            not isinstance(title, str) or not title.strip() or len(title) > 200
        ):
            raise HTTPException(
                status_code=400, detail="title must be a non-empty string (max 200)"
            )
        if pinned is not None and not isinstance(pinned, bool):
            raise HTTPException(status_code=400, detail="is_pinned must be a boolean")
        conv = await _owned(request, conversation_id, user)
        edit = ChatConversationEdited(title=title, is_pinned=pinned)
        conv = await _command(request, conv, lambda s: [edit])
        return conversation_json(conv)

    @post("/{conversation_id:str}/title", summary="Set the title (default: from the first message)")
    async def title(
        self, request: Request[Any, Any, State], conversation_id: str, user: AccountUser
    ) -> dict[str, Any]:
        body = await json_body(request, empty={})
        conv = await _owned(request, conversation_id, user)
        given = body.get("title") if isinstance(body, dict) else None
        if given is not None and (
            not isinstance(given, str) or not given.strip() or len(given) > 200
        ):
            raise HTTPException(
                status_code=400, detail="title must be a non-empty string (max 200)"
            )
        first = conv.turns[0].message.content if conv.turns else ""
        chosen = given or (fallback_title(first) if first else conv.title)
        conv = await _command(request, conv, lambda s: [ChatConversationEdited(title=chosen)])
        return {"title": conv.title}

    @delete("/{conversation_id:str}", summary="Delete a conversation", status_code=204)
    async def remove(
        self, request: Request[Any, Any, State], conversation_id: str, user: AccountUser
    ) -> None:
        await _delete(request, await _owned(request, conversation_id, user))

    @post(
        "/{conversation_id:str}/messages",
        summary="Send a message (starts a turn, or queues it)",
        status_code=202,
    )
    async def send(
        self, request: Request[Any, Any, State], conversation_id: str, user: AccountUser
    ) -> dict[str, Any]:
        body = await json_object(request)
        conv = await _owned(request, conversation_id, user)
        try:
            message = await checked_message(request, user, body)
            _, ev = await chat_log.post_message(
                request.app.state.ctx.event_log, conv, message, queue_when_busy=True
            )
        except ChatError as exc:
            raise _fail(exc) from None
        if ev.starts_turn:
            return {
                "status": "started",
                "user_message": {
                    "id": ev.message_id,
                    "role": "user",
                    "content": ev.content,
                    "created_at_ms": ev.posted_at_ms,
                },
            }
        return {"status": "queued", "queued_message": queued_message(ev)}

    @patch("/{conversation_id:str}/queue/{item_id:str}", summary="Edit a queued message")
    async def edit_queued(
        self,
        request: Request[Any, Any, State],
        conversation_id: str,
        item_id: str,
        user: AccountUser,
    ) -> dict[str, Any]:
        body = await json_object(request)
        try:
            content = chat_log.checked_content(body.get("content"))
        except ChatError as exc:
            raise _fail(exc) from None
        conv = await _owned(request, conversation_id, user)

        def decide(s: Conversation) -> list[Any]:
            if item_id not in s.queue:
                raise ChatError(f"no queued message {item_id}", 404)
            return [ChatQueuedMessageEdited(message_id=item_id, content=content)]

        conv = await _command(request, conv, decide)
        return queued_message(conv.messages[item_id])

    @delete(
        "/{conversation_id:str}/queue/{item_id:str}",
        summary="Drop a queued message",
        status_code=204,
    )
    async def drop_queued(
        self,
        request: Request[Any, Any, State],
        conversation_id: str,
        item_id: str,
        user: AccountUser,
    ) -> None:
        conv = await _owned(request, conversation_id, user)

        def decide(s: Conversation) -> list[Any]:
            if item_id not in s.queue:
                raise ChatError(f"no queued message {item_id}", 404)
            return [ChatQueuedMessageDeleted(message_id=item_id)]

        await _command(request, conv, decide)

    @patch("/{conversation_id:str}/read", summary="Mark the latest reply as read", status_code=200)
    async def mark_read(
        self, request: Request[Any, Any, State], conversation_id: str, user: AccountUser
    ) -> dict[str, Any]:
        conv = await _owned(request, conversation_id, user)
        await _command(
            request, conv, lambda s: [ChatConversationRead(read_at_ms=chat_log.now_ms())]
        )
        return {"has_unread": False}

    @post(
        "/{conversation_id:str}/cancel",
        summary="Stop the running turn (and clear the queue)",
        status_code=204,
    )
    async def cancel(
        self, request: Request[Any, Any, State], conversation_id: str, user: AccountUser
    ) -> None:
        body = await json_body(request, empty={})
        wanted = body.get("turn_id") if isinstance(body, dict) else None
        conv = await _owned(request, conversation_id, user)

        def decide(s: Conversation) -> list[Any]:
            current = s.current
            if current is None or current.cancel is not None:
                return []
            if wanted and wanted != current.turn_id:
                return []  # a stale turn id is ignored (Heym's stale run id)
            return [ChatCancelRequested(turn_id=current.turn_id, requested_at_ms=chat_log.now_ms())]

        await _command(request, conv, decide)

    @get("/{conversation_id:str}/stream", summary="The latest turn's events (replayed, then live)")
    async def stream(
        self, request: Request[Any, Any, State], conversation_id: str, user: AccountUser
    ) -> ServerSentEvent:
        conv = await _owned(request, conversation_id, user)
        event_log = request.app.state.ctx.event_log

        async def frames() -> AsyncIterator[ServerSentEventMessage]:
            async for frame in follow_turn(event_log, conv.conversation_id):
                if frame is PING:
                    yield ServerSentEventMessage(comment="ping")
                else:
                    yield ServerSentEventMessage(data=json.dumps(frame, default=str))
            yield ServerSentEventMessage(data=json.dumps({"type": "done"}))

        return ServerSentEvent(frames())


def chat_error_handler(request: Request[Any, Any, State], exc: ChatError) -> Response[Any]:
    return Response({"status_code": exc.status, "detail": str(exc)}, status_code=exc.status)
