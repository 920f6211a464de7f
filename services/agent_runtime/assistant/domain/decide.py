"""`decide(conversation, now_ms)`: the assistant's next step, from the recorded state alone.

Pure: no I/O, no clock but `now_ms`. A step is either events ready to record (`Record`: a
turn's end, a tool finished by its timeout), work whose result must be recorded before it is
used (`PrepareTurn`, `AskModel`, `StartTool`, `RunTool`, `FinishRun`, `CheckRun`), or
`Idle`: nothing to do until something arrives (a user message, a run's end, a timer).
Tools run one after another in the order the model gave them (Heym).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from contracts.base import Event
from contracts.chat import (
    MAX_ROUNDS,
    ChatQueuedMessageStarted,
    ChatToolFinished,
    ChatTurnCancelled,
    ChatTurnCompleted,
    ChatTurnFailed,
)
from contracts.runs import RunEndReported, RunPauseReported
from libs.chat import Conversation, Round, ToolCall, Turn, workflow_marker
from services.agent_runtime.assistant.domain.build import offered
from services.agent_runtime.assistant.domain.catalog import ToolDef, kind_of

TOO_MANY_ROUNDS = "Too many tool rounds"
_CLARIFY = re.compile(r"```\s*heym-clarify\b", re.IGNORECASE)


@dataclass(frozen=True)
class Idle:
    reason: str


@dataclass(frozen=True)
class Record:
    """Events the decision itself produced; `cancel_runs` are runs to stop afterwards, and
    `timers` durable timers `(timer_id, at_ms)` to set once the events are recorded."""

    events: list[Event]
    cancel_runs: list[str] = field(default_factory=list)
    timers: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class PrepareTurn:
    turn: Turn


@dataclass(frozen=True)
class AskModel:
    turn: Turn
    round: int
    tools: list[ToolDef]


@dataclass(frozen=True)
class StartTool:
    turn: Turn
    round: int
    call: ToolCall


@dataclass(frozen=True)
class RunTool:
    turn: Turn
    call: ToolCall


@dataclass(frozen=True)
class FinishRun:
    """A run tool's run ended, or paused for a human review (the tool answers `pending`)."""

    turn: Turn
    call: ToolCall
    end: RunEndReported | RunPauseReported


@dataclass(frozen=True)
class CheckRun:
    turn: Turn
    call: ToolCall
    attempt: int


Step = Idle | Record | PrepareTurn | AskModel | StartTool | RunTool | FinishRun | CheckRun


def step_key(step: Step) -> tuple[str, ...]:
    """Identifies a step's work: a conflicting append may reuse a result with the same key."""
    if isinstance(step, AskModel):
        return ("ask", step.turn.turn_id, str(step.round))
    if isinstance(step, StartTool | RunTool | FinishRun):
        return (type(step).__name__, step.turn.turn_id, step.call.call_id)
    if isinstance(step, CheckRun):
        return ("check", step.turn.turn_id, step.call.call_id, str(step.attempt))
    if isinstance(step, PrepareTurn):
        return ("prepare", step.turn.turn_id)
    return (type(step).__name__,)


def wait_timer_id(call_id: str, attempt: int) -> str:
    return f"w{_token(call_id)}-{attempt}"


def run_timeout_timer_id(call_id: str) -> str:
    return f"x{_token(call_id)}"


def _token(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "", value)[:96] or "call"


def decide(conv: Conversation, now_ms: int) -> Step:
    turn = conv.current
    if turn is None:
        return Idle("no running turn")
    if turn.cancel is not None or conv.deleted:
        return _cancelled(turn, now_ms)
    if turn.started is None:
        return PrepareTurn(turn)
    last = turn.rounds[-1] if turn.rounds else None
    if last is not None:
        pending = _tools(conv, turn, last, now_ms)
        if pending is not None:
            return pending
        finished = _finish_call(last)
        if finished is not None:
            return _completed(conv, turn, now_ms, text=_summary(finished), verified=finished)
        if not last.calls:
            text = str(last.recorded.message.get("content") or "")
            return _completed(conv, turn, now_ms, text=text)
    if len(turn.rounds) >= MAX_ROUNDS:
        return fail(conv, turn, TOO_MANY_ROUNDS, now_ms)
    return AskModel(turn, round=len(turn.rounds) + 1, tools=offered(turn))


def _tools(conv: Conversation, turn: Turn, rnd: Round, now_ms: int) -> Step | None:
    for call in rnd.calls:
        if call.finished is not None:
            continue
        if call.started is None:
            return StartTool(turn, rnd.number, call)
        kind = kind_of(call.name)
        if kind == "run" and call.started.run_id:
            end = conv.run_ends.get(call.started.run_id) or conv.run_pauses.get(call.started.run_id)
            if end is not None:
                return FinishRun(turn, call, end)
            if any(t in conv.timers_fired for t in call.started.timer_ids):
                return Record([_still_running(turn, call, now_ms)])
            return Idle(f"waiting for run {call.started.run_id}")
        if kind == "wait":
            attempt = len(call.checks) + 1
            run = str(call.args.get("execution_history_id") or "")
            due = wait_timer_id(call.call_id, attempt) in conv.timers_fired
            if attempt == 1 or due or run in conv.run_ends:
                return CheckRun(turn, call, attempt)
            return Idle("waiting for the next check")
        return RunTool(turn, call)
    return None


def fail(conv: Conversation, turn: Turn, error: str, now_ms: int = 0) -> Record:
    """End `turn` with an error (a model failure, a missing credential), starting the next
    queued message in the same batch."""
    failed = ChatTurnFailed(
        turn_id=turn.turn_id, error=error, partial_text=_partial(turn), finished_at_ms=now_ms
    )
    return _ended(conv, failed)


def _finish_call(rnd: Round) -> ToolCall | None:
    for call in rnd.calls:
        done = call.finished
        if call.name == "finish" and done is not None and done.status == "success":
            return call
    return None


def _summary(call: ToolCall) -> str:
    result = call.finished.result if call.finished is not None else None
    if isinstance(result, dict) and isinstance(result.get("summary"), str):
        return str(result["summary"])
    return str(call.args.get("summary") or "")


def _still_running(turn: Turn, call: ToolCall, now_ms: int) -> ChatToolFinished:
    started = call.started
    assert started is not None
    result = {
        "status": "running",
        "execution_history_id": started.run_id,
        "workflow_id": started.args.get("workflow_id"),
        "message": "The workflow is still running; check it with wait_for_execution_update.",
    }
    return ChatToolFinished(
        turn_id=turn.turn_id,
        tool_call_id=call.call_id,
        name=call.name,
        result=result,
        status="running",
        response_summary="Status: running",
        elapsed_ms=float(max(0, now_ms - started.started_at_ms)),
        finished_at_ms=now_ms,
    )


def _completed(
    conv: Conversation,
    turn: Turn,
    now_ms: int,
    *,
    text: str,
    verified: ToolCall | None = None,
) -> Record:
    verified_notice = None
    if verified is not None and verified.finished is not None:
        verified_notice = next(
            (n for n in verified.finished.notices if n.get("type") == "verified"), {}
        )
    return _ended(
        conv,
        ChatTurnCompleted(
            turn_id=turn.turn_id,
            text=text,
            markers=markers(turn),
            paused_for_clarification=asks_clarification(text),
            verified=verified_notice,
            finished_at_ms=now_ms,
            credentials_needed=credentials_needed(turn),
        ),
    )


def cancelled(turn: Turn, now_ms: int) -> Record:
    return _cancelled(turn, now_ms)


def _cancelled(turn: Turn, now_ms: int) -> Record:
    reason = turn.cancel.reason if turn.cancel is not None else "conversation deleted"
    runs = [
        c.started.run_id
        for c in turn.calls()
        if c.started is not None and c.started.run_id and c.finished is None
    ]
    end = ChatTurnCancelled(
        turn_id=turn.turn_id, partial_text=_partial(turn), reason=reason, finished_at_ms=now_ms
    )
    return Record([end], cancel_runs=runs)


def _ended(conv: Conversation, end: ChatTurnCompleted | ChatTurnFailed) -> Record:
    """A turn's end, with the next queued message's start in the same batch (unless the turn
    paused for a clarification: the queue then waits for the user)."""
    events: list[Event] = [end]
    paused = isinstance(end, ChatTurnCompleted) and end.paused_for_clarification
    if conv.queue and not paused:
        events.append(ChatQueuedMessageStarted(message_id=conv.queue[0]))
    return Record(events)


def _partial(turn: Turn) -> str:
    for rnd in reversed(turn.rounds):
        content = rnd.recorded.message.get("content")
        if isinstance(content, str) and content.strip():
            return content
    return ""


def asks_clarification(text: str) -> bool:
    return bool(_CLARIFY.search(text))


SAVING_TOOLS = frozenset({"save_workflow", "create_workflow", "edit_workflow"})


def credentials_needed(turn: Turn) -> list[dict[str, Any]]:
    """What the turn's last save still needs (credential mode `ask_via_link`): the user
    creates each credential through a link and answers on the same A2A task."""
    if turn.message.credential_mode != "ask_via_link":
        return []
    needed: list[dict[str, Any]] = []
    for call in turn.calls():
        result = call.finished.result if call.finished is not None else None
        if call.name not in SAVING_TOOLS or not isinstance(result, dict):
            continue
        needs = result.get("needs") if result.get("status") == "requires_credentials" else []
        needed = [dict(n) for n in needs or [] if isinstance(n, dict)]
    return needed


def markers(turn: Turn) -> list[str]:
    """One hidden marker per workflow the turn created or changed (Heym §12.4)."""
    seen: dict[str, str] = {}
    for call in turn.calls():
        for notice in call.finished.notices if call.finished is not None else []:
            if notice.get("type") == "workflow_created" and notice.get("workflow_id"):
                seen[str(notice["workflow_id"])] = str(notice.get("workflow_name") or "")
    return [workflow_marker(wid, name) for wid, name in seen.items()]
