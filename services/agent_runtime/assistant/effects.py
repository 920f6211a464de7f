"""Doing a decided step: the I/O behind it, and the events that record its result.

`perform` returns the events to append and the follow-ups (`after`) that may only happen once
those events are recorded: starting a run whose id was just recorded, setting a durable
timer, stopping runs of a cancelled turn. Every follow-up is idempotent (fixed run ids and
message ids), so `resume` repeats them for a conversation loaded after a restart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.chat import ChatTimerFired
from contracts.runs import CancelRequested
from libs.chat import Conversation, Turn
from libs.config import Settings
from libs.eventlog import EventLog
from libs.secrets.credentials import ResolvedCredential
from services.agent_runtime.assistant.domain import (
    AskModel,
    CheckRun,
    FinishRun,
    PrepareTurn,
    Record,
    RunTool,
    StartTool,
    Step,
)
from services.agent_runtime.assistant.domain.build import progress
from services.agent_runtime.assistant.domain.catalog import kind_of
from services.agent_runtime.assistant.model_round import ModelRound
from services.agent_runtime.assistant.prompt import prepare_turn
from services.agent_runtime.assistant.tool_steps import ToolSteps
from services.agent_runtime.assistant.tools import runs as run_tools
from services.agent_runtime.assistant.tools.env import ToolEnv, int_arg, text_arg
from services.agent_runtime.assistant.tools.workflows import owned
from services.agent_runtime.assistant.work import After, Work, now_ms
from services.agent_runtime.model import ModelClients

log = logging.getLogger(__name__)

CREDENTIAL_TTL_S = 5.0
Resolve = Callable[[str, str], Awaitable[ResolvedCredential | None]]


class Effects:
    def __init__(
        self,
        *,
        pool: asyncpg.Pool[Any],
        event_log: EventLog,
        nc: NATS,
        models: ModelClients,
        resolve: Resolve,
        settings: Settings,
    ) -> None:
        self._pool = pool
        self._log = event_log
        self._nc = nc
        self._js = nc.jetstream()
        self._models = models
        self._resolve_uncached = resolve
        self._credentials: dict[tuple[str, str], tuple[float, ResolvedCredential | None]] = {}
        self._settings = settings
        self._model = ModelRound(models, self._resolve)
        self._tools = ToolSteps(settings, self._env, self.set_timer)

    async def perform(self, conv: Conversation, step: Step) -> Work:
        if isinstance(step, Record):
            timers = [self._timer(conv.conversation_id, t, at) for t, at in step.timers]
            return Work(step.events, [self._cancel_runs(step.cancel_runs), *timers])
        if isinstance(step, PrepareTurn):
            return Work([await prepare_turn(self._pool, conv, step.turn)])
        if isinstance(step, AskModel):
            return await self._model.ask(conv, step)
        if isinstance(step, StartTool):
            return await self._tools.start_tool(conv, step)
        if isinstance(step, RunTool):
            return await self._tools.run_tool(conv, step)
        if isinstance(step, FinishRun):
            return await self._tools.finish_run(conv, step)
        if isinstance(step, CheckRun):
            return await self._tools.check_run(conv, step)
        raise TypeError(f"no effect for {step!r}")

    async def _resolve(self, credential_id: str, owner_id: str) -> ResolvedCredential | None:
        """A credential, decrypted at most every few seconds per turn's credential (a round
        needs it several times; a changed or deleted credential is seen within seconds)."""
        key = (credential_id, owner_id)
        now = time.monotonic()
        found = self._credentials.get(key)
        if found is not None and now - found[0] < CREDENTIAL_TTL_S:
            return found[1]
        cred = await self._resolve_uncached(credential_id, owner_id)
        if len(self._credentials) > 1024:
            self._credentials.clear()
        self._credentials[key] = (now, cred)
        return cred

    async def _env(self, conv: Conversation, turn: Turn) -> ToolEnv:
        cred = None
        if turn.message.credential_id:
            cred = await self._resolve(turn.message.credential_id, conv.owner_id)
        return ToolEnv(
            pool=self._pool,
            nc=self._nc,
            event_log=self._log,
            models=self._models,
            settings=self._settings,
            conv=conv,
            turn=turn,
            credential=cred,
        )

    # -- follow-ups --------------------------------------------------------------------------
    async def set_timer(self, conversation_id: str, timer_id: str, at_ms: int) -> None:
        at = datetime.fromtimestamp(at_ms / 1000, UTC)
        stamp = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        await self._js.publish(
            subjects.chat_timer_schedule(conversation_id, timer_id),
            self._log.codec.encode([ChatTimerFired(timer_id=timer_id)]),
            headers={
                "Nats-Schedule": f"@at {stamp}",
                "Nats-Schedule-Target": subjects.chat_commands(conversation_id),
                "Nats-Msg-Id": f"chat-timer-{conversation_id}-{timer_id}",
            },
        )

    def _timer(self, conversation_id: str, timer_id: str, at_ms: int) -> After:
        async def set_it() -> None:
            await self.set_timer(conversation_id, timer_id, at_ms)

        return set_it

    def _cancel_runs(self, run_ids: list[str]) -> After:
        async def cancel() -> None:
            for run_id in run_ids:
                await self._log.append(
                    subjects.run_commands(run_id),
                    [CancelRequested(reason="the chat turn was cancelled")],
                    message_id=f"cancel-{run_id}-chat",
                )

        return cancel

    async def resume(self, conv: Conversation) -> None:
        """Repeat the follow-ups a conversation loaded from the log may still owe: the run of
        a started run tool (its request is appended once, by fixed id) and its timer."""
        turn = conv.current
        if turn is None or turn.cancel is not None:
            return
        env = await self._env(conv, turn)
        timeout_ms = int(self._settings.execute_timeout_s * 1000)
        for call in turn.calls():
            started = call.started
            if started is None or call.finished is not None:
                continue
            if kind_of(call.name) == "wait" and call.checks:
                interval = int_arg(started.args, "interval_seconds", 5, 1, 30)
                last = call.checks[-1]
                at = _ms(last.checked_at) + interval * 1000
                await self.set_timer(conv.conversation_id, last.timer_id, at)
            if not started.run_id or started.run_id in conv.run_ends:
                continue
            workflow_id = text_arg(started.args, "workflow_id") or progress(turn).workflow_id or ""
            row = await owned(env, workflow_id)
            if row is not None:
                body = run_tools.run_inputs(
                    row, started.args.get("inputs"), turn.message.attachment
                )
                request = await run_tools.request_run(env, row, started.run_id, body)
                await run_tools.start(env, started.run_id, request)
            for timer in started.timer_ids:
                await self.set_timer(
                    conv.conversation_id, timer, started.started_at_ms + timeout_ms
                )


def _ms(iso: str) -> int:
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return now_ms()
