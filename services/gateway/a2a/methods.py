"""The A2A methods: each takes the caller and its params and returns a JSON-RPC result, or
(for the two streaming methods) an async iterator of SSE results. Tasks come from the log
(`tasks_log`), located and listed by the task store (`store`)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from contracts import subjects
from contracts.chat import ChatTurnCancelled, ChatTurnCompleted, ChatTurnFailed
from libs.a2a import Task, TaskBook, render, stream_result, wire
from libs.service import ServiceContext
from services.gateway.a2a import store, tasks_log
from services.gateway.a2a.bus import TurnBus
from services.gateway.a2a.card import extended_card
from services.gateway.a2a.jsonrpc import (
    RpcError,
    invalid,
    opt_bool,
    opt_int,
    opt_object,
    opt_str,
    req_str,
)
from services.gateway.a2a.messages import checked
from services.gateway.mcp.catalog import ChatSurface, chat_surface
from services.gateway.mcp.principals import Principal

RECHECK_S = 1.0
SETTLE_FIRST_S = 0.002
PING_S = 15.0
NO_MODEL = (
    "No model is configured for the Heym Agent on this server: pick a credential and a model "
    "in the MCP / A2A tab."
)
Results = AsyncIterator[dict[str, Any]]


@dataclass(frozen=True)
class Caller:
    principal: Principal
    origin: str
    # the surface's credential and model, read with the A2A switch at the edge
    surface: ChatSurface | None = None


class Methods:
    def __init__(self, ctx: ServiceContext, bus: TurnBus, *, conformance: bool) -> None:
        self.ctx = ctx
        self.bus = bus
        self.conformance = conformance

    # -- sending -------------------------------------------------------------------------
    async def _post(
        self, caller: Caller, params: dict[str, Any], *, wait: bool = False
    ) -> tuple[tasks_log.Posted, dict[str, Any]]:
        config = opt_object(params, "configuration")
        if config.get("taskPushNotificationConfig") or config.get("pushNotificationConfig"):
            raise RpcError(wire.PUSH_NOT_SUPPORTED, "Push notifications are not supported")
        opt_bool(config, "returnImmediately")
        opt_int(config, "historyLength", 0, 1_000_000)
        incoming = checked(params.get("message"))
        surface = caller.surface or await chat_surface(self.ctx.pool, caller.principal)
        credential_id, model = surface.credential_id or "", surface.model or ""
        if not self.conformance and (not credential_id or not model):
            raise RpcError(wire.UNSUPPORTED_OPERATION, NO_MODEL)
        to = await tasks_log.target(self.ctx.pool, self.ctx.event_log, caller.principal, incoming)
        with self.bus.waiting(to.book.context_id) as queue:
            posted = await tasks_log.post(
                self.ctx.event_log,
                caller.principal,
                to,
                incoming,
                credential_id=credential_id,
                model=model,
            )
            if wait and not config.get("returnImmediately"):
                task_id, turn_id = posted.task.task_id, posted.turn_id
                posted.book = await self._until_settled(posted.book, task_id, turn_id, queue)
                posted.task = posted.book.tasks[task_id]
        return posted, config

    async def send_message(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        posted, config = await self._post(caller, params, wait=True)
        task = posted.task
        if task.message_only and task.reply is not None:
            return {"message": task.reply}
        history = config.get("historyLength")
        return {"task": render(task, origin=caller.origin, history_length=history)}

    async def _until_settled(
        self, book: TaskBook, task_id: str, turn_id: str, queue: asyncio.Queue[Any]
    ) -> TaskBook:
        """Wait for the turn to end (the watch is a hint; the log is read to confirm)."""
        deadline = time.monotonic() + self.ctx.settings.execute_timeout_s
        while True:
            task = book.tasks[task_id]
            if task.terminal or task.interrupted or task.message_only:
                return book
            left = deadline - time.monotonic()
            if left <= 0:
                return book
            ended = False
            with contextlib.suppress(TimeoutError):
                ev = await asyncio.wait_for(queue.get(), min(RECHECK_S, left))
                ended = (
                    isinstance(ev, ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled)
                    and ev.turn_id == turn_id
                )
                if not ended:
                    continue
            book = await self._read_end(book, task_id, expect_end=ended)

    async def _read_end(self, book: TaskBook, task_id: str, *, expect_end: bool) -> TaskBook:
        """Fold what the log holds since the book's position. Core NATS can deliver the turn's
        end before the stream has stored it: then the log is read again a few milliseconds
        later (for up to RECHECK_S), not after the next one-second re-check. Direct reads (no
        consumer): a lagging replica only delays the answer the same way."""
        delay, waited = SETTLE_FIRST_S, 0.0
        while True:
            for env in await self.ctx.event_log.read_recent(
                subjects.chat_all(book.context_id), after=book.conversation.last_seq
            ):
                book.fold(env)
            task = book.tasks[task_id]
            settled = task.terminal or task.interrupted or task.message_only
            if settled or not expect_end or waited >= RECHECK_S:
                return book
            await asyncio.sleep(delay)
            waited += delay
            delay = min(delay * 2, 0.1)

    async def send_streaming(self, caller: Caller, params: dict[str, Any]) -> Results:
        posted, _ = await self._post(caller, params)
        return self._follow(caller, posted.book, posted.task, close_on_interrupt=True)

    async def subscribe(self, caller: Caller, params: dict[str, Any]) -> Results:
        task_id = req_str(params, "id")
        book, task = await tasks_log.find(
            self.ctx.pool, self.ctx.event_log, caller.principal, task_id
        )
        if task.terminal:
            raise RpcError(
                wire.UNSUPPORTED_OPERATION,
                f"the task is {task.state}: there is nothing to follow",
                metadata={"taskId": task_id},
            )
        return self._follow(caller, book, task, close_on_interrupt=False)

    async def _follow(
        self, caller: Caller, book: TaskBook, task: Task, *, close_on_interrupt: bool
    ) -> Results:
        """The task first, then its status and artifact updates from the log, in log order,
        until it ends (or, for SendStreamingMessage, until it waits for input)."""

        def done(t: Task) -> bool:
            return t.terminal or t.message_only or (close_on_interrupt and t.interrupted)

        if task.message_only and task.reply is not None:
            yield {"message": task.reply}
            return
        yield {"task": render(task, origin=caller.origin)}
        if done(task):
            return
        filter_subject = subjects.chat_all(book.context_id)
        async with self.ctx.event_log.tail(
            filter_subject, after=book.conversation.last_seq
        ) as queue:
            while True:
                try:
                    env = await asyncio.wait_for(queue.get(), PING_S)
                except TimeoutError:
                    yield {}  # a keep-alive comment
                    continue
                for change in book.fold(env):
                    if change.task_id != task.task_id:
                        continue
                    current = book.tasks[task.task_id]
                    if current.message_only and current.reply is not None:
                        yield {"message": current.reply}
                        return
                    yield stream_result(book, change, origin=caller.origin)
                if done(book.tasks[task.task_id]):
                    return

    # -- reading -------------------------------------------------------------------------
    async def get_task(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        task_id = req_str(params, "id")
        history = opt_int(params, "historyLength", 0, 1_000_000)
        _, task = await tasks_log.find(self.ctx.pool, self.ctx.event_log, caller.principal, task_id)
        return render(task, origin=caller.origin, history_length=history)

    async def list_tasks(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        page_size = opt_int(params, "pageSize", 1, 100) or 50
        history = opt_int(params, "historyLength", 0, 1_000_000) or 0
        include_artifacts = bool(opt_bool(params, "includeArtifacts"))
        state = opt_str(params, "status", 64)
        if state is not None and not store.is_state(state):
            raise invalid(f"status must be one of {', '.join(wire.STATES)}", "status")
        after_text = opt_str(params, "statusTimestampAfter", 64)
        after = wire.parse_timestamp(after_text) if after_text else None
        if after_text and after is None:
            raise invalid(
                "statusTimestampAfter must be an ISO 8601 timestamp", "statusTimestampAfter"
            )
        token = opt_str(params, "pageToken", 512)
        cursor = store.read_token(token) if token else None
        if token and cursor is None:
            raise invalid("pageToken is not a token from this server", "pageToken")
        wanted = store.ListFilter(context_id=opt_str(params, "contextId"), state=state, after=after)
        await store.caught_up(self.ctx.pool, self.ctx.event_log)
        rows, total = await store.list_tasks(
            self.ctx.pool, caller.principal, wanted, cursor=cursor, page_size=page_size
        )
        page, more = rows[:page_size], len(rows) > page_size
        tasks: dict[str, dict[str, Any]] = {}
        for context_id, group in groupby(
            sorted(page, key=lambda r: r.context_id), lambda r: r.context_id
        ):
            book = await tasks_log.load_book(self.ctx.event_log, context_id)
            for row in group:
                found = book.tasks.get(row.task_id)
                if found is not None:
                    tasks[row.task_id] = render(
                        found,
                        origin=caller.origin,
                        history_length=history,
                        include_artifacts=include_artifacts,
                    )
        return {
            "tasks": [tasks[r.task_id] for r in page if r.task_id in tasks],
            "nextPageToken": store.page_token(page[-1]) if more and page else "",
            "pageSize": page_size,
            "totalSize": total,
        }

    async def cancel_task(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        task_id = req_str(params, "id")
        book, task = await tasks_log.find(
            self.ctx.pool, self.ctx.event_log, caller.principal, task_id
        )
        book = await tasks_log.cancel(self.ctx.event_log, book, task)
        return render(book.tasks[task_id], origin=caller.origin)

    async def extended_card(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return await extended_card(self.ctx.pool, caller.principal, caller.origin)
