"""What follows a recorded agent step outside its own aggregate, every one idempotent:
starting the children of dispatched tool calls, delivering the invocation's result (to the
scheduler, or to the orchestrator that called it), passing a cancel down to children, and
leaving the memory extraction work item after a success (after the result, never before it).

After a crash the runtime repeats the effects the reloaded state may still owe (`resume`)
instead of tracking which ones went out: each is an expected-sequence-0 append (a child's
first event) or carries a fixed message id (a result, a cancel).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from contracts import subjects
from contracts.agents import (
    AgentCancelRequested,
    AgentFinished,
    DispatchedCall,
    SubAgentDispatched,
    ToolCallRecorded,
)
from contracts.base import Event
from contracts.nodes import NodeAttemptFailed, NodeCompleted
from contracts.runs import CancelRequested
from contracts.tools import SandboxToolCancelled, tool_result_message_id
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.results.node_log import append_result
from services.agent_runtime import tracing
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import AgentState
from services.agent_runtime.memory.request import extraction_request, extraction_subject
from services.agent_runtime.review_effects import close_review
from services.agent_runtime.tools.plan import Dispatch

log = logging.getLogger(__name__)


class Effects:
    def __init__(self, event_log: EventLog) -> None:
        self._log = event_log

    @property
    def log(self) -> EventLog:
        return self._log

    async def dispatch(self, call: AgentCall, dispatches: list[Dispatch]) -> None:
        """Start every child of a turn at once (sub-agents run in parallel, on any replica)."""
        await asyncio.gather(*(self._start(call, d) for d in dispatches))

    async def _start(self, call: AgentCall, d: Dispatch) -> None:
        # A conflict: started before (a re-drive after a crash), the child is already running.
        with contextlib.suppress(ConcurrencyConflict):
            await self._log.append(
                d.subject,
                [d.event],
                expected_sequence=0,
                message_id=d.message_id,
                correlation_id=call.correlation_id,
                traceparent=d.traceparent or call.traceparent,
            )

    async def deliver(self, call: AgentCall, state: AgentState) -> None:
        """Hand the invocation's end to whoever waits for it: the scheduler (a node result,
        exactly one per invocation) or the calling orchestrator (its tool call's result)."""
        finished = state.finished
        if finished is None:
            return
        if isinstance(state.request, SubAgentDispatched):
            # The delegated row of the run's node results (Heym's `sub_agent_tool` rows) comes
            # first, so it is in the log before the orchestrator can go on and end the run.
            # Both are sent at once and their acks awaited together (one round trip on the
            # path instead of two): the node result's task runs first and buffers its message
            # before the other's, and the server stores one connection's messages in order.
            # Should the first fail, the message is redelivered and both are repeated
            # (idempotent).
            await asyncio.gather(
                self._node_result(call, state, finished), self._to_parent(call, state, finished)
            )
        else:
            await self._node_result(call, state, finished)

    async def _node_result(self, call: AgentCall, state: AgentState, done: AgentFinished) -> None:
        started = state.started.started_at_ms if state.started else state.requested_at_ms
        metadata: dict[str, Any] = {}
        if call.parent_invocation_id:
            metadata = {
                "invocation": "sub_agent_tool",
                "parent_invocation_id": call.parent_invocation_id,
            }
        if state.reviews:
            # The review branch ran at the pause: it never runs again (Heym §5.5).
            metadata["skip_source_handles"] = ["hitl"]
        result: NodeCompleted | NodeAttemptFailed
        if done.status == "success":
            result = NodeCompleted(
                invocation_id=call.invocation_id,
                node_id=call.node_id,
                node_label=call.node_label,
                node_type=call.node_type,
                status="success",
                output=done.output,
                attempt=call.attempt,
                started_at_ms=started,
                finished_at_ms=done.finished_at_ms,
                metadata=metadata,
            )
        else:
            result = NodeAttemptFailed(
                invocation_id=call.invocation_id,
                node_id=call.node_id,
                node_label=call.node_label,
                node_type=call.node_type,
                attempt=call.attempt,
                error=done.error or done.status,
                retryable=done.retryable and done.status == "error",
                output=done.output,
                started_at_ms=started,
                finished_at_ms=done.finished_at_ms,
                metadata=metadata,
            )
        # Exactly one final result per invocation, after its pending markers (if it paused).
        recorded = await append_result(
            self._log,
            subjects.node(call.run_id, call.invocation_id),
            result,
            message_id=f"result-{call.run_id}-{call.invocation_id}",
            correlation_id=call.correlation_id,
            traceparent=call.traceparent,
        )
        if recorded:
            tracing.node_done(call, state, result)

    async def _to_parent(self, call: AgentCall, state: AgentState, done: AgentFinished) -> None:
        parent = call.parent_invocation_id
        assert parent is not None
        output = done.output if isinstance(done.output, dict) else {}
        result: dict[str, Any]
        if done.status == "success":
            result = {"text": output.get("text", "")}
        else:
            result = {"text": "", "error": done.error or done.status}
        record = ToolCallRecorded(
            turn=call.parent_turn,
            tool_call_id=call.parent_tool_call_id,
            name="call_sub_agent",
            source="sub_agent",
            arguments="",
            result=result,
            status="success" if done.status == "success" else done.status,
            started_at_ms=state.requested_at_ms,
            finished_at_ms=done.finished_at_ms,
            elapsed_ms=float(max(0, done.finished_at_ms - state.requested_at_ms)),
            extra={"sub_agent_label": call.node_label, "invocation_id": call.invocation_id},
            node_id=call.parent_node_id,
            node_label=call.parent_node_label,
        )
        await self._log.append(
            subjects.agent(call.run_id, parent),
            [record],
            message_id=tool_result_message_id(call.run_id, parent, call.parent_tool_call_id),
            correlation_id=call.correlation_id,
            traceparent=call.traceparent,
        )

    async def request_extraction(self, call: AgentCall, state: AgentState) -> None:
        """Leave the run's memory extraction as a work item of its own (expected sequence 0:
        once per invocation, however often this is repeated); the run's answer never waits."""
        event = extraction_request(call, state)
        if event is None:
            return
        with contextlib.suppress(ConcurrencyConflict):
            await self._log.append(
                extraction_subject(call),
                [event],
                expected_sequence=0,
                message_id=f"memory-{call.run_id}-{call.invocation_id}",
                correlation_id=call.correlation_id,
                traceparent=call.traceparent,
            )

    async def cancel_children(
        self, call: AgentCall, dispatched: list[DispatchedCall], reason: str
    ) -> None:
        await asyncio.gather(*(self._cancel(call, d, reason) for d in dispatched))

    async def _cancel(self, call: AgentCall, d: DispatchedCall, reason: str) -> None:
        subject: str
        event: Event
        if d.source == "hitl":
            with contextlib.suppress(Exception):
                await close_review(self._log, call, d.target)
            return
        if d.source == "sub_agent":
            subject, event = (
                subjects.agent(call.run_id, d.target),
                AgentCancelRequested(reason=reason),
            )
        elif d.source == "sub_workflow":
            subject, event = subjects.run_commands(d.target), CancelRequested(reason=reason)
        else:
            subject = subjects.work_item(call.run_id, "tool_sandbox", d.target)
            event = SandboxToolCancelled(tool_call_id=d.tool_call_id, reason=reason)
        try:
            await self._log.append(
                subject,
                [event],
                message_id=f"cancel-{call.run_id}-{d.target}",
                correlation_id=call.correlation_id,
                traceparent=call.traceparent,
            )
        except Exception:  # a child that cannot be told still ends: its result is dropped
            log.exception("could not pass the cancel of %s to %s", call.invocation_id, d.target)
