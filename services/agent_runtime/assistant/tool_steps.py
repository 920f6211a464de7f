"""Tool steps: a tool call's start (its label; a run tool's run request and timeout timer),
a tool that answers at once, the result of a run once its end is reported, and the checks of
`wait_for_execution_update` on durable timers. Each returns the events recording it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg

from contracts.chat import ChatToolChecked, ChatToolFinished, ChatToolStarted
from contracts.runs import RunPauseReported
from libs.chat import Conversation, ToolCall, Turn
from libs.config import Settings
from services.agent_runtime.assistant.domain import (
    CheckRun,
    FinishRun,
    RunTool,
    StartTool,
    run_timeout_timer_id,
    wait_timer_id,
)
from services.agent_runtime.assistant.domain.build import progress
from services.agent_runtime.assistant.domain.catalog import ALL_TOOLS, kind_of, label
from services.agent_runtime.assistant.domain.results import (
    bounded,
    images_in,
    summary,
    tool_status,
)
from services.agent_runtime.assistant.tools import run_sync
from services.agent_runtime.assistant.tools import runs as run_tools
from services.agent_runtime.assistant.tools.build_mode import BUDGET_SPENT
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, int_arg, text_arg
from services.agent_runtime.assistant.tools.workflows import owned
from services.agent_runtime.assistant.work import Work, now_ms

log = logging.getLogger(__name__)

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
Env = Callable[[Conversation, Turn], Awaitable[ToolEnv]]
SetTimer = Callable[[str, str, int], Awaitable[None]]


class ToolSteps:
    def __init__(self, settings: Settings, env: Env, set_timer: SetTimer) -> None:
        self.settings = settings
        self.env = env
        self.set_timer = set_timer

    async def start_tool(self, conv: Conversation, step: StartTool) -> Work:
        turn, call = step.turn, step.call
        env = await self.env(conv, turn)
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
        request = await run_tools.request_run(env, row, run_id, body, tool_call_id=call.call_id)
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
        timeout_ms = int(self.settings.execute_timeout_s * 1000)

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

    async def run_tool(self, conv: Conversation, step: RunTool) -> Work:
        env = await self.env(conv, step.turn)
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

    async def finish_run(self, conv: Conversation, step: FinishRun) -> Work:
        env = await self.env(conv, step.turn)
        call, end = step.call, step.end
        started = call.started
        assert started is not None
        results = await run_tools.node_results(env, end.run_id)
        notices: list[dict[str, Any]] = []
        if isinstance(end, RunPauseReported):
            result: dict[str, Any] = run_tools.paused_result(end, results)
            notices.append(run_tools.pending_notice(result))
        elif call.name == "run_workflow_test":
            attempt = sum(
                1
                for c in step.turn.calls()
                if c.name == "run_workflow_test"
                and c.started is not None
                and c.started.run_id
                and c.started.started_at_ms <= started.started_at_ms
            )
            result = run_tools.test_report(
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
                    step.turn,
                    call.call_id,
                    call.name,
                    Outcome(result, notices),
                    started.started_at_ms,
                )
            ]
        )

    async def check_run(self, conv: Conversation, step: CheckRun) -> Work:
        env = await self.env(conv, step.turn)
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
            "pending_review": (
                await run_tools.review_for_run(env, run_id, row["workflow_name"])
                if row["status"] == "pending"
                else None
            ),
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


def _known(name: str) -> bool:
    return name in ALL_TOOLS
