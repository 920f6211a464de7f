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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.base import Event
from contracts.chat import (
    ChatContextCompressed,
    ChatRoundRecorded,
    ChatTimerFired,
    ChatToolChecked,
    ChatToolFinished,
    ChatToolStarted,
)
from contracts.runs import CancelRequested
from libs.chat import Conversation, ToolCall, Turn
from libs.config import Settings
from libs.eventlog import EventLog
from libs.observability.redaction import sanitize_trace_payload
from libs.secrets.credentials import ResolvedCredential
from services.agent_runtime import compression
from services.agent_runtime.assistant.domain import (
    AskModel,
    CheckRun,
    FinishRun,
    PrepareTurn,
    Record,
    RunTool,
    StartTool,
    Step,
    run_timeout_timer_id,
    wait_timer_id,
)
from services.agent_runtime.assistant.domain.build import progress
from services.agent_runtime.assistant.domain.catalog import ALL_TOOLS, kind_of, label
from services.agent_runtime.assistant.domain.decide import fail
from services.agent_runtime.assistant.domain.results import (
    bounded,
    images_in,
    summary,
    tool_status,
)
from services.agent_runtime.assistant.messages import model_messages
from services.agent_runtime.assistant.prompt import prepare_turn
from services.agent_runtime.assistant.tools import run_sync
from services.agent_runtime.assistant.tools import runs as run_tools
from services.agent_runtime.assistant.tools.build_mode import BUDGET_SPENT
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, int_arg, text_arg
from services.agent_runtime.assistant.tools.workflows import owned
from services.agent_runtime.model import ModelClients, ModelError

log = logging.getLogger(__name__)

TEMPERATURE = 0.1
CREDENTIAL_TTL_S = 5.0
MAX_IMAGE_CHARS = 1_500_000
# Read-only tools that answer in milliseconds: recorded started and finished in one append
# (a crash before it simply reruns the read). Slower or writing tools record their start
# first, so the step label shows while they work.
INLINE_TOOLS = frozenset(
    {
        "list_workflows",
        "get_workflow_definition",
        "get_recent_executions",
        "get_active_executions",
        "get_workflow_run_history",
        "get_analytics_stats",
        "search_documentation",
        "get_schedule_events",
        "get_global_variables",
        "finish",
    }
)
Resolve = Callable[[str, str], Awaitable[ResolvedCredential | None]]
After = Callable[[], Awaitable[None]]
_OVERFLOW = ("context length", "context_length", "maximum context", "too many tokens")


@dataclass
class Work:
    events: list[Event]
    after: list[After] = field(default_factory=list)


def now_ms() -> int:
    return int(time.time() * 1000)


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

    async def perform(self, conv: Conversation, step: Step) -> Work:
        if isinstance(step, Record):
            return Work(step.events, [self._cancel_runs(step.cancel_runs)])
        if isinstance(step, PrepareTurn):
            return Work([await prepare_turn(self._pool, conv, step.turn)])
        if isinstance(step, AskModel):
            return await self._ask(conv, step)
        if isinstance(step, StartTool):
            return await self._start_tool(conv, step)
        if isinstance(step, RunTool):
            return await self._run_tool(conv, step)
        if isinstance(step, FinishRun):
            return await self._finish_run(conv, step)
        if isinstance(step, CheckRun):
            return await self._check_run(conv, step)
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

    # -- model rounds ------------------------------------------------------------------------
    async def _ask(self, conv: Conversation, step: AskModel) -> Work:
        turn = step.turn
        cred = await self._resolve(turn.message.credential_id, conv.owner_id)
        if cred is None:
            return Work(
                fail(conv, turn, "The chat's model credential was not found.", now_ms()).events
            )
        model = (turn.started.model if turn.started else "") or turn.message.model
        messages = model_messages(conv, turn)
        limit = await self._models.context_limit(cred, model)
        tokens = compression.estimate_tokens(messages)
        if step.round not in turn.compressions and tokens >= compression.THRESHOLD * limit:
            compressed = await self._compress(cred, model, messages, limit, step)
            if compressed is not None:
                return Work([compressed])
        try:
            reply = await self._models.chat(
                cred,
                model=model,
                messages=messages,
                tools=[t.schema() for t in step.tools] or None,
                temperature=TEMPERATURE,
            )
        except ModelError as exc:
            overflow = any(k in str(exc).lower() for k in _OVERFLOW)
            if overflow and step.round not in turn.compressions:
                # One hard compression and a retry on a provider's "context exceeded".
                hard = int(tokens / compression.THRESHOLD) + 1
                compressed = await self._compress(cred, model, messages, hard, step)
                if compressed is not None:
                    return Work([compressed])
            return Work(fail(conv, turn, str(exc), now_ms()).events)
        # The stored trace holds what this round added (all of it for the first), so tracing
        # a long turn costs O(n) in all rather than O(n) per round.
        seen = turn.rounds[-1].recorded.request_messages + 1 if turn.rounds else 0
        added = messages[seen:] if 0 < seen <= len(messages) else messages
        trace = sanitize_trace_payload(
            {
                "request": {
                    "messages": added,
                    "messages_total": len(messages),
                    "tools": [t.name for t in step.tools],
                    "source": "dashboard_chat",
                },
                "response": reply.message,
            }
        )
        return Work(
            [
                ChatRoundRecorded(
                    turn_id=turn.turn_id,
                    round=step.round,
                    message=reply.message,
                    model=reply.model,
                    finish_reason=reply.finish_reason,
                    usage=reply.usage,
                    elapsed_ms=reply.elapsed_ms,
                    request_messages=len(messages),
                    context_tokens=tokens,
                    context_limit=limit,
                    trace=trace,
                )
            ]
        )

    async def _compress(
        self,
        cred: ResolvedCredential,
        model: str,
        messages: list[dict[str, Any]],
        limit: int,
        step: AskModel,
    ) -> ChatContextCompressed | None:
        summarize = compression.summarize_with_openai(self._models.client(cred), model)
        _, info = await compression.compress(
            messages, model=model, limit=limit, summarize=summarize
        )
        if info is None:
            return None
        return ChatContextCompressed(
            turn_id=step.turn.turn_id,
            round=step.round,
            summary=info.summary,
            first_user_index=info.first_user_index,
            tail_start_index=info.tail_start_index,
            messages_compressed=info.messages_compressed,
            messages_before_count=info.messages_before_count,
            messages_after_count=info.messages_after_count,
            tokens_before=info.tokens_before,
            tokens_after=info.tokens_after,
            elapsed_ms=info.elapsed_ms,
        )

    # -- tools -------------------------------------------------------------------------------
    async def _start_tool(self, conv: Conversation, step: StartTool) -> Work:
        turn, call = step.turn, step.call
        env = await self._env(conv, turn)
        args = call.args
        name = ""
        if call.name in ("get_workflow_definition", "execute_workflow", "edit_workflow"):
            row = await owned(env, text_arg(args, "workflow_id"))
            name = row.name if row is not None else ""
        attempt = progress(turn).runs_used + 1 if call.name == "run_workflow_test" else 0
        started = ChatToolStarted(
            turn_id=turn.turn_id,
            round=step.round,
            tool_call_id=call.call_id,
            name=call.name,
            label=label(call.name, args, workflow_name=name, attempt=attempt),
            args=args,
            started_at_ms=now_ms(),
        )
        if kind_of(call.name) == "run":
            return await self._start_run(env, call, started)
        if call.name in INLINE_TOOLS or not _known(call.name):
            outcome = await self._sync(env, call)
            finished = self._finished(turn, call.call_id, call.name, outcome, started.started_at_ms)
            return Work([started, finished])
        return Work([started])

    async def _start_run(self, env: ToolEnv, call: ToolCall, started: ChatToolStarted) -> Work:
        args = started.args
        turn = env.turn
        if call.name == "execute_workflow":
            row = await owned(env, text_arg(args, "workflow_id"))
            if row is None:
                return self._finished_now(
                    turn, started, {"status": "error", "error": "Workflow not found"}
                )
        else:
            if turn.message.build is None:
                return self._finished_now(turn, started, {"error": f"Unknown tool: {call.name}"})
            p = progress(turn)
            if p.runs_left == 0:
                return self._finished_now(
                    turn, started, {"status": "refused", "error": BUDGET_SPENT}
                )
            row = await owned(env, p.workflow_id or "") if p.revision else None
            if row is None:
                return self._finished_now(
                    turn,
                    started,
                    {"status": "error", "error": "Nothing is saved yet: call save_workflow first."},
                )
        if not row.nodes:
            return self._finished_now(
                turn, started, {"status": "error", "error": "The workflow has no nodes"}
            )
        run_id = env.fixed_id(call, "run").replace("-", "")
        body = run_tools.run_inputs(row, args.get("inputs"), turn.message.attachment)
        request = await run_tools.request_run(env, row, run_id, body)
        timer = run_timeout_timer_id(call.call_id)
        recorded = ChatToolStarted(
            turn_id=started.turn_id,
            round=started.round,
            tool_call_id=started.tool_call_id,
            name=started.name,
            label=started.label,
            args=started.args,
            started_at_ms=started.started_at_ms,
            run_id=run_id,
            timer_ids=[timer],
        )
        timeout_ms = int(self._settings.execute_timeout_s * 1000)

        async def start_run() -> None:
            await run_tools.start(env, run_id, request)
            await self.set_timer(env.conversation_id, timer, now_ms() + timeout_ms)

        return Work([recorded], [start_run])

    def _finished_now(self, turn: Turn, started: ChatToolStarted, result: Any) -> Work:
        return Work(
            [
                started,
                self._finished(
                    turn, started.tool_call_id, started.name, Outcome(result), started.started_at_ms
                ),
            ]
        )

    def _finished(
        self, turn: Turn, call_id: str, name: str, outcome: Outcome, started_at_ms: int
    ) -> ChatToolFinished:
        status = tool_status(outcome.result)
        notices = list(outcome.notices)
        images = [i for i in images_in(outcome.result) if len(i) <= MAX_IMAGE_CHARS]
        if images:
            notices.append({"type": "tool_output", "tool": name, "images": images})
        finished = now_ms()
        return ChatToolFinished(
            turn_id=turn.turn_id,
            tool_call_id=call_id,
            name=name,
            result=bounded(outcome.result),
            status=status,
            response_summary=summary(name, outcome.result, status),
            elapsed_ms=float(max(0, finished - started_at_ms)),
            finished_at_ms=finished,
            notices=notices,
        )

    async def _run_tool(self, conv: Conversation, step: RunTool) -> Work:
        env = await self._env(conv, step.turn)
        started = step.call.started
        assert started is not None
        outcome = await self._sync(env, step.call)
        return Work(
            [
                self._finished(
                    step.turn, step.call.call_id, step.call.name, outcome, started.started_at_ms
                )
            ]
        )

    async def _sync(self, env: ToolEnv, call: ToolCall) -> Outcome:
        try:
            return await run_sync(env, call)
        except (asyncpg.PostgresError, OSError) as exc:
            log.warning("tool %s failed: %r", call.name, exc)
            return Outcome({"error": f"{call.name} failed: {type(exc).__name__}"})

    async def _finish_run(self, conv: Conversation, step: FinishRun) -> Work:
        env = await self._env(conv, step.turn)
        call, end = step.call, step.end
        started = call.started
        assert started is not None
        results = await run_tools.node_results(env, end.run_id)
        if call.name == "run_workflow_test":
            attempt = sum(
                1
                for c in step.turn.calls()
                if c.name == "run_workflow_test"
                and c.started is not None
                and c.started.run_id
                and c.started.started_at_ms <= started.started_at_ms
            )
            result: dict[str, Any] = run_tools.test_report(
                end,
                results,
                attempt=attempt,
                inputs=started.args.get("inputs"),
                expect=str(started.args.get("expect") or ""),
                revision=progress(step.turn).revision,
            )
        else:
            result = run_tools.execution_result(end, results)
        return Work(
            [
                self._finished(
                    step.turn, call.call_id, call.name, Outcome(result), started.started_at_ms
                )
            ]
        )

    async def _check_run(self, conv: Conversation, step: CheckRun) -> Work:
        env = await self._env(conv, step.turn)
        call = step.call
        started = call.started
        assert started is not None
        args = started.args
        run_id = text_arg(args, "execution_history_id")
        interval = int_arg(args, "interval_seconds", 5, 1, 30)
        max_checks = int_arg(args, "max_checks", 5, 1, 10)
        row = await run_tools.run_row(env, run_id) if run_id else None
        if row is None:
            return Work(
                [
                    self._finished(
                        step.turn,
                        call.call_id,
                        call.name,
                        Outcome({"error": "Execution not found"}),
                        started.started_at_ms,
                    )
                ]
            )
        checked = ChatToolChecked(
            turn_id=step.turn.turn_id,
            tool_call_id=call.call_id,
            attempt=step.attempt,
            checked_at=datetime.now(UTC).isoformat(timespec="seconds"),
            status=row["status"],
            timer_id=wait_timer_id(call.call_id, step.attempt + 1),
        )
        if row["status"] in ("pending", "running") and step.attempt < max_checks:
            timer = checked.timer_id

            async def next_check() -> None:
                await self.set_timer(conv.conversation_id, timer, now_ms() + interval * 1000)

            return Work([checked], [next_check])
        checks = [*call.checks, checked]
        result = {
            "status": row["status"],
            "execution_history_id": run_id,
            "workflow_id": row["workflow_id"],
            "workflow_name": row["workflow_name"],
            "checks_performed": len(checks),
            "interval_seconds": interval,
            "checks": [
                {"attempt": c.attempt, "checked_at": c.checked_at, "status": c.status}
                for c in checks
            ],
            "outputs": row["outputs"] or {},
            "node_results": await run_tools.run_nodes(env, run_id),
            "pending_review": None,
            "execution_time_ms": row["execution_time_ms"],
            "started_at": (row["started_at"] or row["requested_at"]).isoformat(),
        }
        return Work(
            [
                checked,
                self._finished(
                    step.turn, call.call_id, call.name, Outcome(result), started.started_at_ms
                ),
            ]
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


def _known(name: str) -> bool:
    return name in ALL_TOOLS


def _ms(iso: str) -> int:
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return now_ms()
