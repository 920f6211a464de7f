"""What follows a review step outside the agent's aggregate, every one idempotent: handing
the request to the review service, reporting the pause up (the pending node result, and for
a sub-agent the parent's `agent.child_paused`), and closing a review whose run was cancelled.
"""

from __future__ import annotations

import contextlib
import time

import msgspec

from contracts import subjects
from contracts.nodes import NodeCompleted
from contracts.review import ChildPaused, ReviewClosed
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.results.node_log import append_result
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import Review


async def request_review(event_log: EventLog, call: AgentCall, review: Review) -> None:
    """The review's own subject starts with a copy of the request (expected sequence 0: it
    is sent once however often the agent re-drives)."""
    copy = msgspec.structs.replace(review.requested, agent_sequence=review.sequence)
    with contextlib.suppress(ConcurrencyConflict):
        await event_log.append(
            subjects.work_item(call.run_id, "review", review.requested.request_id),
            [copy],
            expected_sequence=0,
            message_id=f"review-{call.run_id}-{review.requested.request_id}",
            correlation_id=call.correlation_id,
            traceparent=call.traceparent,
        )


async def report_pause(
    event_log: EventLog,
    call: AgentCall,
    request_id: str,
    payload: dict[str, object],
    *,
    started_at_ms: int,
) -> None:
    """The paused invocation's pending result (one per checkpoint, before its final result),
    and for a sub-agent the pause told to its orchestrator, which pauses in turn."""
    metadata: dict[str, object] = {"review_request_id": request_id}
    if call.parent_invocation_id:
        metadata.update(invocation="sub_agent_tool", parent_invocation_id=call.parent_invocation_id)
    pending = NodeCompleted(
        invocation_id=call.invocation_id,
        node_id=call.node_id,
        node_label=call.node_label,
        node_type=call.node_type,
        status="pending",
        output=payload,
        attempt=call.attempt,
        started_at_ms=started_at_ms,
        finished_at_ms=int(time.time() * 1000),
        metadata=metadata,
    )
    await append_result(
        event_log,
        subjects.node(call.run_id, call.invocation_id),
        pending,
        message_id=f"pending-{call.run_id}-{call.invocation_id}-{request_id}",
        correlation_id=call.correlation_id,
        traceparent=call.traceparent,
    )
    parent = call.parent_invocation_id
    if parent:
        await event_log.append(
            subjects.agent(call.run_id, parent),
            [
                ChildPaused(
                    tool_call_id=call.parent_tool_call_id,
                    request_id=request_id,
                    child=call.invocation_id,
                    payload=dict(payload),
                    turn=call.parent_turn,
                )
            ],
            message_id=f"paused-{call.run_id}-{parent}-{request_id}",
            correlation_id=call.correlation_id,
            traceparent=call.traceparent,
        )


async def close_review(event_log: EventLog, call: AgentCall, request_id: str) -> None:
    """The run (or the agent) was cancelled while it waited: the review ends with it."""
    await event_log.append(
        subjects.work_item(call.run_id, "review", request_id),
        [ReviewClosed(request_id=request_id, status="cancelled", closed_at_ms=_now())],
        message_id=f"closed-{call.run_id}-{request_id}",
        correlation_id=call.correlation_id,
        traceparent=call.traceparent,
    )


def _now() -> int:
    return int(time.time() * 1000)
