"""The agent tool loop (Heym §4.3), event-sourced on the invocation's own subject.

Each step is decided from the recorded state and recorded before anything uses it: the
prepared conversation (`AgentStarted`), every model response (`LlmCallRecorded`), every tool
result (`ToolCallRecorded`), every compression (`ContextCompressed`), then the result
(`NodeCompleted`, or `NodeAttemptFailed` for the scheduler's retry policy). A runtime that
restarts, or a replica that gets the redelivered dispatch, replays the invocation and goes
on from the last recorded step: no recorded model turn or tool result is redone. Appends use
the aggregate's expected sequence; losing a race means re-reading and going on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from contracts import subjects
from contracts.agents import AgentStarted, ContextCompressed, LlmCallRecorded, ToolCallRecorded
from contracts.base import Event
from contracts.nodes import NodeAttemptFailed, NodeCompleted
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.observability.redaction import sanitize_trace_payload
from libs.secrets.credentials import ResolvedCredential
from services.agent_runtime import compression
from services.agent_runtime.call import AgentCall
from services.agent_runtime.model import ModelClients, ModelError, ModelReply
from services.agent_runtime.prompts import (
    PromptError,
    build_messages,
    response_format,
    skills_prefix,
)
from services.agent_runtime.result import agent_output
from services.agent_runtime.state import AgentState
from services.agent_runtime.tools.runner import ToolRunner
from services.agent_runtime.tools.spec import ToolSpec

log = logging.getLogger(__name__)

LIMIT_TEXT = "Tool iteration limit reached."
Resolve = Callable[[str, str], Awaitable[ResolvedCredential | None]]


class _Restart(Exception):
    """Someone else recorded a step first: re-read the invocation and go on from there."""


class AgentFailed(Exception):
    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


def now_ms() -> int:
    return int(time.time() * 1000)


class AgentLoop:
    def __init__(
        self, event_log: EventLog, models: ModelClients, resolve: Resolve, tools: ToolRunner
    ) -> None:
        self._log = event_log
        self._models = models
        self._resolve = resolve
        self._tools = tools

    async def run(self, call: AgentCall) -> None:
        subject = subjects.node(call.run_id, call.invocation_id)
        for _ in range(50):
            state = AgentState()
            for env in await self._log.read(subject):
                state.fold(env)
            if state.finished is not None:
                return
            try:
                await self._drive(call, state, subject)
                return
            except _Restart:
                continue
        raise RuntimeError(f"agent {call.invocation_id}: too many concurrent writers")

    # -- recording ---------------------------------------------------------------------------
    async def _record(self, call: AgentCall, state: AgentState, subject: str, event: Event) -> None:
        try:
            appended = await self._log.append(
                subject,
                [event],
                expected_sequence=state.last_seq,
                correlation_id=call.correlation_id,
                traceparent=call.traceparent,
            )
        except ConcurrencyConflict:
            raise _Restart from None
        state.apply(event, appended.sequence)

    # -- the loop ----------------------------------------------------------------------------
    async def _drive(self, call: AgentCall, state: AgentState, subject: str) -> None:
        data = call.data
        try:
            if state.started is None:
                await self._start(call, state, subject)
            assert state.started is not None
            cred = await self._credential(call, str(data.get("credentialId") or ""))
            specs = {t["name"]: ToolSpec(**t) for t in state.started.tools}
            final = await self._iterate(call, state, subject, cred, specs)
        except AgentFailed as exc:
            await self._record(
                call, state, subject, self._failure(call, state, str(exc), exc.retryable)
            )
            return
        await self._record(call, state, subject, final)

    async def _start(self, call: AgentCall, state: AgentState, subject: str) -> None:
        data = call.data
        if not data.get("model") or not data.get("credentialId"):
            raise AgentFailed("No credential or model configured", retryable=False)
        if data.get("jsonOutputEnabled") and data.get("hitlEnabled"):
            raise AgentFailed("JSON output cannot be combined with human review", retryable=False)
        try:
            messages = build_messages(call, skills_text=skills_prefix(data))
        except PromptError as exc:
            raise AgentFailed(str(exc), retryable=False) from None
        tools = [] if call.node_type == "llm" else self._tools.catalog(call)
        await self._record(
            call,
            state,
            subject,
            AgentStarted(
                invocation_id=call.invocation_id,
                node_id=call.node_id,
                node_label=call.node_label,
                node_type=call.node_type,
                model=str(data.get("model")),
                credential_id=str(data.get("credentialId")),
                messages=messages,
                tools=[
                    {
                        "name": t.name,
                        "source": t.source,
                        "description": t.description,
                        "parameters": t.parameters,
                        "meta": t.meta,
                    }
                    for t in tools
                ],
                max_tool_iterations=_int(data.get("maxToolIterations"), 30),
                depth=call.agent_depth,
                started_at_ms=now_ms(),
            ),
        )

    async def _credential(self, call: AgentCall, credential_id: str) -> ResolvedCredential:
        cred = await self._resolve(credential_id, call.owner_id)
        if cred is None:
            raise AgentFailed(f"credential {credential_id!r} not found", retryable=False)
        return cred

    async def _iterate(
        self,
        call: AgentCall,
        state: AgentState,
        subject: str,
        cred: ResolvedCredential,
        specs: dict[str, ToolSpec],
    ) -> NodeCompleted:
        assert state.started is not None
        max_iterations = state.started.max_tool_iterations
        while True:
            turn = state.turns[-1] if state.turns else None
            if turn is not None and turn.missing():
                await self._run_tools(call, state, subject, len(state.turns), specs)
                continue
            if turn is not None and (turn.llm.grace or not turn.tool_calls):
                return self._finish(call, state, turn.llm)
            if turn is not None and state.model_turns >= max_iterations:
                return await self._grace(call, state, subject, cred)
            await self._maybe_compress(call, state, subject, cred)
            messages = state.messages()
            reply, fallback = await self._chat(call, messages, cred, specs)
            await self._record(
                call, state, subject, self._llm_event(state, reply, fallback, messages)
            )

    async def _chat(
        self,
        call: AgentCall,
        messages: list[dict[str, Any]],
        cred: ResolvedCredential,
        specs: dict[str, ToolSpec],
        *,
        tool_choice: str | None = None,
        with_tools: bool = True,
    ) -> tuple[ModelReply, bool]:
        data = call.data
        kwargs: dict[str, Any] = {
            "messages": messages,
            "tools": [s.schema() for s in specs.values()] if with_tools and specs else None,
            "tool_choice": tool_choice,
            "temperature": _float(data.get("temperature"), 0.7),
            "max_tokens": _int(data.get("maxTokens"), 0) or None,
            "reasoning_effort": data.get("reasoningEffort"),
            "response_format": response_format(data),
        }
        try:
            return await self._models.chat(cred, model=str(data["model"]), **kwargs), False
        except ModelError as primary:
            fallback_id = data.get("fallbackCredentialId")
            fallback_model = data.get("fallbackModel")
            if not (fallback_id and fallback_model):
                raise AgentFailed(
                    f"{call.node_type.capitalize()} error: {primary}", retryable=primary.retryable
                ) from None
            backup = await self._credential(call, str(fallback_id))
            try:
                return await self._models.chat(backup, model=str(fallback_model), **kwargs), True
            except ModelError as second:
                raise AgentFailed(
                    f"{call.node_type.capitalize()} error: {primary}; fallback: {second}",
                    retryable=second.retryable,
                ) from None

    def _llm_event(
        self,
        state: AgentState,
        reply: ModelReply,
        fallback: bool,
        messages: list[dict[str, Any]],
        *,
        grace: bool = False,
    ) -> LlmCallRecorded:
        assert state.started is not None
        # The stored trace holds what this call added to the conversation (the first call: all
        # of it), so tracing a long loop costs O(n) in all rather than O(n) per call.
        seen = state.turns[-1].llm.request_messages + 1 if state.turns else 0
        new = messages[seen:] if 0 < seen <= len(messages) else messages
        trace = sanitize_trace_payload(
            {
                "request": {
                    "messages": new,
                    "messages_total": len(messages),
                    "tools": [t["name"] for t in state.started.tools],
                },
                "response": reply.message,
            }
        )
        return LlmCallRecorded(
            turn=len(state.turns) + 1,
            node_id=state.started.node_id,
            node_label=state.started.node_label,
            model=reply.model,
            message=reply.message,
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            elapsed_ms=reply.elapsed_ms,
            fallback_used=fallback,
            grace=grace,
            request_messages=len(messages),
            trace=trace,
        )

    async def _grace(
        self, call: AgentCall, state: AgentState, subject: str, cred: ResolvedCredential
    ) -> NodeCompleted:
        """Iterations used up with a tool result last: one call without tools for an answer."""
        messages = state.messages()
        reply: ModelReply | None = None
        fallback = False
        if messages and messages[-1].get("role") == "tool":
            try:
                reply, fallback = await self._chat(
                    call, messages, cred, {}, tool_choice="none", with_tools=False
                )
            except AgentFailed:
                reply = None
        if reply is None or not (reply.message.get("content") or "").strip():
            placeholder = ModelReply(
                message={"role": "assistant", "content": LIMIT_TEXT},
                model=str(call.data.get("model")),
                finish_reason="length",
                usage={},
                elapsed_ms=0.0,
            )
            reply = placeholder
        await self._record(
            call, state, subject, self._llm_event(state, reply, fallback, messages, grace=True)
        )
        return self._finish(call, state, state.turns[-1].llm)

    async def _maybe_compress(
        self, call: AgentCall, state: AgentState, subject: str, cred: ResolvedCredential
    ) -> None:
        if call.node_type != "agent" or not state.turns:
            return
        model = str(call.data.get("model"))
        client = self._models.client(cred)
        limit = await self._models.context_limit(cred, model)
        messages = state.messages()
        if compression.estimate_tokens(messages) < compression.THRESHOLD * limit:
            return  # the common case: no summariser to build
        _, info = await compression.compress(
            messages,
            model=model,
            limit=limit,
            summarize=compression.summarize_with_openai(client, model),
        )
        if info is None:
            return
        await self._record(
            call,
            state,
            subject,
            ContextCompressed(
                turn=len(state.turns) + 1,
                node_id=call.node_id,
                node_label=call.node_label,
                summary=info.summary,
                first_user_index=info.first_user_index,
                tail_start_index=info.tail_start_index,
                messages_compressed=info.messages_compressed,
                messages_before_count=info.messages_before_count,
                messages_after_count=info.messages_after_count,
                tokens_before=info.tokens_before,
                tokens_after=info.tokens_after,
                elapsed_ms=info.elapsed_ms,
            ),
        )

    async def _run_tools(
        self,
        call: AgentCall,
        state: AgentState,
        subject: str,
        turn_no: int,
        specs: dict[str, ToolSpec],
    ) -> None:
        turn = state.turns[turn_no - 1]
        missing = turn.missing()

        async def one(tool_call: dict[str, Any]) -> ToolCallRecorded:
            return await self._tools.run(call, turn_no, tool_call, specs)

        sub_agents = [c for c in missing if (specs.get(_name(c)) or _NO_SPEC).source == "sub_agent"]
        others = [c for c in missing if c not in sub_agents]
        if len(sub_agents) > 1:
            # Several sub-agents in one turn run concurrently (each may land on another replica).
            for result in await asyncio.gather(*(one(c) for c in sub_agents)):
                await self._record(call, state, subject, result)
        else:
            others = sub_agents + others
        for tool_call in others:
            await self._record(call, state, subject, await one(tool_call))

    # -- results -----------------------------------------------------------------------------
    def _finish(self, call: AgentCall, state: AgentState, llm: LlmCallRecorded) -> NodeCompleted:
        assert state.started is not None
        text = llm.message.get("content") or llm.message.get("reasoning") or ""
        parsed: dict[str, Any] | None = None
        if call.data.get("jsonOutputEnabled"):
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            if value is not None:
                parsed = value if isinstance(value, dict) else {"value": value}
        if call.node_type == "llm":
            output = _llm_output(state, text, llm, parsed)
        else:
            output = agent_output(state, text, model=llm.model, parsed=parsed)
        metadata: dict[str, Any] = {}
        if call.parent_invocation_id:
            metadata["invocation"] = "sub_agent_tool"
            metadata["parent_invocation_id"] = call.parent_invocation_id
        return NodeCompleted(
            invocation_id=call.invocation_id,
            node_id=call.node_id,
            node_label=call.node_label,
            node_type=call.node_type,
            status="success",
            output=output,
            attempt=call.attempt,
            started_at_ms=state.started.started_at_ms,
            finished_at_ms=now_ms(),
            metadata=metadata,
        )

    def _failure(
        self, call: AgentCall, state: AgentState, message: str, retryable: bool
    ) -> NodeAttemptFailed:
        started = state.started.started_at_ms if state.started else now_ms()
        return NodeAttemptFailed(
            invocation_id=call.invocation_id,
            node_id=call.node_id,
            node_label=call.node_label,
            node_type=call.node_type,
            attempt=call.attempt,
            error=message,
            retryable=retryable,
            output={"text": "", "model": call.data.get("model"), "error": message},
            started_at_ms=started,
            finished_at_ms=now_ms(),
        )


_NO_SPEC = ToolSpec(name="", source="", description="", parameters={})


def _name(tool_call: dict[str, Any]) -> str:
    return str((tool_call.get("function") or {}).get("name", ""))


def _llm_output(
    state: AgentState, text: str, llm: LlmCallRecorded, parsed: dict[str, Any] | None
) -> dict[str, Any]:
    if parsed is not None:
        out = dict(parsed)
        out["model"] = llm.model
        out["fallbackUsed"] = llm.fallback_used
        return out
    completion = llm.usage.get("completion_tokens", 0)
    seconds = llm.elapsed_ms / 1000 if llm.elapsed_ms else 0.0
    return {
        "text": text,
        "model": llm.model,
        "usage": dict(llm.usage),
        "tokens_per_sec": round(completion / seconds, 2) if seconds else 0.0,
        "elapsed_ms": llm.elapsed_ms,
        **({"fallbackUsed": True} if llm.fallback_used else {}),
    }


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _float(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default
