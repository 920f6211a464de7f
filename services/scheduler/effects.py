"""Side effects that follow a recorded decision: durable timers, child runs, parent replies.

Each is idempotent (a fixed message id, or an expected-sequence-0 append), because after a
crash the scheduler repeats the effects of the state it reloads rather than track which ones
it already performed.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.agents import AgentCancelRequested, ToolCallRecorded, ToolStatus
from contracts.base import Event
from contracts.nodes import (
    ChildRunStarted,
    NodeAttemptFailed,
    NodeCompleted,
    TimerFired,
    TimerScheduled,
)
from contracts.review import ChildPaused
from contracts.runs import (
    CancelRequested,
    ParentLink,
    RunCompleted,
    RunEndReported,
    RunPaused,
    RunPauseReported,
    RunRequested,
)
from contracts.tools import tool_result_message_id
from libs import telemetry
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.results.node_log import append_result
from services.scheduler import tracing
from services.scheduler.domain import RunState

log = logging.getLogger(__name__)

AGENT_NODE_TYPES = frozenset({"agent", "llm"})


class Effects:
    def __init__(self, nc: NATS, event_log: EventLog) -> None:
        self._js = nc.jetstream()
        self._log = event_log

    async def after_decision(self, state: RunState, events: list[Event]) -> None:
        for ev in events:
            if isinstance(ev, TimerScheduled):
                await self.schedule_timer(state.run_id, ev, _run_header(state))
            elif isinstance(ev, ChildRunStarted):
                await self.start_child(state, ev)
            elif isinstance(ev, RunCompleted):
                await self.run_completed(state, ev)
            elif isinstance(ev, RunPaused):
                await self.run_paused(state, ev)

    async def resume(self, state: RunState) -> None:
        """Repeat the effects a reloaded run may still owe (all idempotent)."""
        if state.completed is not None:
            await self.run_completed(state, state.completed)
            return
        if state.run_paused is not None and state.run_paused_node in state.paused:
            paused = state.paused[state.run_paused_node]
            review = paused.output if isinstance(paused.output, dict) else {}
            await self.run_paused(
                state,
                RunPaused(
                    node_id=state.run_paused_node, request_id=state.run_paused, review=review
                ),
            )
        for timer in state.timers.values():
            if timer.timer_id not in state.fired:
                await self.schedule_timer(state.run_id, timer, _run_header(state))
        for started in state.children.values():
            if started.invocation_id in state.inflight:
                await self.start_child(state, started)

    async def _cancel_inflight(self, state: RunState, reason: str) -> None:
        """Pass a cancel down to everything still running: child runs and agent invocations."""
        run = tracing.run_trace(state.run_id, state.request)
        for child, started in state.children.items():
            if started.invocation_id in state.inflight:
                await self._log.append(
                    subjects.run_commands(child),
                    [CancelRequested(reason="parent run cancelled")],
                    message_id=f"cancel-{child}",
                    traceparent=telemetry.header_of(
                        telemetry.node_context(run, state.run_id, started.invocation_id)
                    ),
                )
        for invocation, node_id in state.inflight.items():
            if state.graph.types.get(node_id) in AGENT_NODE_TYPES:
                await self._log.append(
                    subjects.agent(state.run_id, invocation),
                    [AgentCancelRequested(reason=reason)],
                    message_id=f"cancel-{state.run_id}-{invocation}",
                    traceparent=telemetry.header_of(
                        telemetry.node_context(run, state.run_id, invocation)
                    ),
                )

    async def _answer_agent(self, state: RunState, parent: ParentLink, done: RunCompleted) -> None:
        """A child run started by an agent's `call_sub_workflow` answers that tool call."""
        request = state.request
        result: dict[str, Any] = {
            "status": done.status,
            "outputs": done.outputs,
            "execution_time_ms": done.execution_time_ms,
        }
        status: ToolStatus = "success"
        if done.status != "success":
            result["error"] = done.error or (done.outputs or {}).get("error") or done.status
            status = "cancelled" if done.status == "cancelled" else "error"
        started = request.requested_at_ms or state.started_at_ms
        record = ToolCallRecorded(
            turn=parent.turn,
            tool_call_id=parent.tool_call_id,
            name=parent.tool_name or "call_sub_workflow",
            source="sub_workflow",
            arguments="",
            result=result,
            status=status,
            started_at_ms=started,
            finished_at_ms=done.finished_at_ms,
            elapsed_ms=float(max(0, done.finished_at_ms - started)),
            extra={
                "workflow_name": request.workflow_name,
                "workflow_id": request.workflow_id,
                "execution_id": state.run_id,
            },
            node_id=parent.node_id,
            node_label=parent.node_label,
        )
        await self._log.append(
            subjects.agent(parent.run_id, parent.invocation_id),
            [record],
            message_id=tool_result_message_id(
                parent.run_id, parent.invocation_id, parent.tool_call_id
            ),
            traceparent=request.traceparent,
        )

    async def run_paused(self, state: RunState, paused: RunPaused) -> None:
        """A child run paused for a review: its parent pauses too (an Execute node records a
        pending result, an agent's sub-workflow call tells the agent), and so on to the root.
        Whoever waits on the run (a conversation) is told it is pending, with the review."""
        if state.request.report_to:
            await self.report_pause(state, paused)
        parent = state.request.parent
        if parent is None:
            return
        if parent.via == "agent" and parent.tool_call_id:
            await self._log.append(
                subjects.agent(parent.run_id, parent.invocation_id),
                [
                    ChildPaused(
                        tool_call_id=parent.tool_call_id,
                        request_id=paused.request_id,
                        child=state.run_id,
                        payload=paused.review,
                        turn=parent.turn,
                    )
                ],
                message_id=f"paused-{parent.run_id}-{parent.invocation_id}-{paused.request_id}",
            )
            return
        if not parent.wait:
            return  # nobody waits for a fire-and-forget child: it just stays pending
        pending = NodeCompleted(
            invocation_id=parent.invocation_id,
            node_id=parent.node_id,
            node_label=parent.node_label,
            node_type=parent.node_type,
            status="pending",
            output=paused.review,
            attempt=parent.attempt,
            finished_at_ms=int(time.time() * 1000),
            metadata={"review_request_id": paused.request_id, "child_run_id": state.run_id},
        )
        await append_result(
            self._log,
            subjects.node(parent.run_id, parent.invocation_id),
            pending,
            message_id=f"pending-{parent.run_id}-{parent.invocation_id}-{paused.request_id}",
        )

    async def schedule_timer(
        self, run_id: str, timer: TimerScheduled, traceparent: str | None = None
    ) -> None:
        at = datetime.fromtimestamp(timer.fire_at_ms / 1000, UTC)
        stamp = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        headers = {
            "Nats-Schedule": f"@at {stamp}",
            "Nats-Schedule-Target": subjects.run_timer(run_id),
            "Nats-Msg-Id": f"timer-{run_id}-{timer.timer_id}",
        }
        if traceparent:
            headers["traceparent"] = traceparent
        await self._js.publish(
            subjects.timer_schedule(run_id, timer.timer_id),
            self._log.codec.encode([TimerFired(timer_id=timer.timer_id)]),
            headers=headers,
        )

    async def start_child(self, state: RunState, started: ChildRunStarted) -> None:
        request = state.request
        node_id = started.node_id
        snapshot = request.workflow_cache[started.workflow_id]
        source = "AI Agents" if request.trigger_source == "AI Agents" else "SUB_WORKFLOW"
        # The child run is a child of the Execute node's span, in the parent run's trace.
        node_span = telemetry.node_context(
            tracing.run_trace(state.run_id, request), state.run_id, started.invocation_id
        )
        run_trace = telemetry.new_run_context(started.child_run_id, telemetry.header_of(node_span))
        child = RunRequested(
            workflow_id=snapshot.id,
            workflow_name=snapshot.name,
            owner_id=request.owner_id,
            nodes=snapshot.nodes,
            edges=snapshot.edges,
            inputs={"headers": {}, "query": {}, "body": started.inputs},
            # Test mode passes down: a test run's children write no history either.
            test_run=request.test_run,
            trigger_source=source,
            parent=ParentLink(
                run_id=state.run_id,
                invocation_id=started.invocation_id,
                node_id=node_id,
                node_label=state.graph.labels.get(node_id, ""),
                attempt=started.attempt,
                wait=started.wait,
            ),
            depth=request.depth + 1,
            requested_at_ms=int(time.time() * 1000),
            workflow_cache=request.workflow_cache,
            timezone=request.timezone,
            traceparent=telemetry.header_of(node_span),
            run_traceparent=telemetry.header_of(run_trace),
            # Heym: the child's globals are the parent's merged with the parent's $vars.
            globals={**request.globals, **state.vars},
            review_branch=request.review_branch or node_id in state.review_branch,
        )
        try:
            await self._log.append(
                subjects.run_commands(started.child_run_id),
                [child],
                expected_sequence=0,
                message_id=f"start-{started.child_run_id}",
                traceparent=child.run_traceparent,
            )
        except ConcurrencyConflict:
            log.info("child run %s was already started", started.child_run_id)

    async def report_end(self, state: RunState, done: RunCompleted) -> None:
        """Tell whoever waits on the run (a conversation) that it ended: an append with a fixed
        message id, repeated harmlessly after a reload."""
        ended = RunEndReported(
            run_id=state.run_id,
            workflow_id=state.request.workflow_id,
            workflow_name=state.request.workflow_name,
            status=done.status,
            outputs=done.outputs,
            error=done.error,
            execution_time_ms=done.execution_time_ms,
            finished_at_ms=done.finished_at_ms,
        )
        await self._report(state, ended, "end", f"run-end-{state.run_id}")

    async def report_pause(self, state: RunState, paused: RunPaused) -> None:
        reported = RunPauseReported(
            run_id=state.run_id,
            workflow_id=state.request.workflow_id,
            workflow_name=state.request.workflow_name,
            request_id=paused.request_id,
            review=paused.review,
            outputs=paused.outputs,
            execution_time_ms=paused.execution_time_ms,
        )
        message_id = f"run-paused-{state.run_id}-{paused.request_id}"
        await self._report(state, reported, "pause", message_id)

    async def _report(self, state: RunState, event: Event, what: str, message_id: str) -> None:
        target = state.request.report_to
        if not subjects.is_report_target(target):
            log.warning("run %s: refusing to report its %s to %r", state.run_id, what, target)
            return
        await self._log.append(target, [event], message_id=message_id)

    async def run_completed(self, state: RunState, done: RunCompleted) -> None:
        if done.status == "cancelled":
            await self._cancel_inflight(state, done.error or "parent run cancelled")
        if state.request.report_to:
            await self.report_end(state, done)
        parent = state.request.parent
        if parent is not None and parent.via == "agent" and parent.tool_call_id:
            await self._answer_agent(state, parent, done)
            return
        if parent is None or not parent.wait:
            return
        output = {
            "workflow_id": state.request.workflow_id,
            "status": done.status,
            "outputs": done.outputs,
            "execution_time_ms": done.execution_time_ms,
        }
        result: NodeCompleted | NodeAttemptFailed
        if done.status == "success":
            result = NodeCompleted(
                invocation_id=parent.invocation_id,
                node_id=parent.node_id,
                node_label=parent.node_label,
                node_type=parent.node_type,
                status="success",
                output=output,
                finished_at_ms=done.finished_at_ms,
            )
        else:
            name = state.request.workflow_name or state.request.workflow_id
            verb = "failed" if done.status == "error" else "was cancelled"
            result = NodeAttemptFailed(
                invocation_id=parent.invocation_id,
                node_id=parent.node_id,
                node_label=parent.node_label,
                node_type=parent.node_type,
                attempt=parent.attempt,
                error=f"sub-workflow {name!r} {verb}" + (f": {done.error}" if done.error else ""),
                retryable=done.status == "error",
                output=output,
                finished_at_ms=done.finished_at_ms,
            )
        # After the pending markers of a child that paused for a review, exactly once.
        recorded = await append_result(
            self._log,
            subjects.node(parent.run_id, parent.invocation_id),
            result,
            message_id=f"child-done-{state.run_id}",
            traceparent=state.request.traceparent,
        )
        if not recorded:
            log.info("parent %s already has the result of child %s", parent.run_id, state.run_id)
            return
        tracing.execute_node_done(state, result)


def _run_header(state: RunState) -> str | None:
    return telemetry.header_of(tracing.run_trace(state.run_id, state.request))
