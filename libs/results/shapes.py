"""Event → Heym JSON: NodeResult rows (§2.12) and the streaming protocol's frames (§2.13)."""

from __future__ import annotations

import json
from typing import Any

from contracts.agents import (
    ContextCompressed,
    LlmCallRecorded,
    SubAgentDispatched,
    ToolCallRecorded,
)
from contracts.base import Envelope
from contracts.nodes import (
    ChildRunStarted,
    NodeCompleted,
    NodeDispatched,
    NodeRetryScheduled,
    TimerScheduled,
)
from contracts.runs import RunCompleted, RunOutputReady, RunPaused, RunStarted


def _sequence(env: Envelope) -> int:
    # The event's position in the log; `numbered` turns it into Heym's per-run `sequence`.
    return env.sequence * 1000 + env.index


def numbered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in log order with Heym's `metadata.sequence`: 1, 2, 3... within the run.

    Rows come from `node_result` / `retry_result`, whose `sequence` is still the log
    position (the stream position stays in `metadata.stream_sequence`)."""
    ordered = sorted(rows, key=lambda r: r["metadata"]["sequence"])
    for i, row in enumerate(ordered, start=1):
        row["metadata"] = {**row["metadata"], "sequence": i}
    return ordered


def node_result(env: Envelope, ev: NodeCompleted) -> dict[str, Any]:
    metadata = dict(ev.metadata)
    metadata.pop("loop", None)  # scheduler bookkeeping, not part of the result
    metadata.update(
        sequence=_sequence(env),
        stream_sequence=env.sequence,
        started_at_ms=ev.started_at_ms,
        ended_at_ms=ev.finished_at_ms,
        attempt=ev.attempt,
        invocation_id=ev.invocation_id,
    )
    return {
        "node_id": ev.node_id,
        "node_label": ev.node_label,
        "node_type": ev.node_type,
        "status": ev.status,
        "output": ev.output if ev.output is not None else {},
        "execution_time_ms": float(max(0, ev.finished_at_ms - ev.started_at_ms)),
        "error": ev.error,
        "metadata": metadata,
    }


def retry_result(env: Envelope, ev: NodeRetryScheduled) -> dict[str, Any]:
    """The row of an attempt that failed and will be retried (Heym's retry log row)."""
    wait = ev.wait_s if ev.wait_s % 1 else int(ev.wait_s)
    retry = {
        "retry_attempt": ev.attempt,
        "retry_max_attempts": ev.max_attempts,
        "retry_wait_seconds": ev.wait_s,
    }
    return {
        "node_id": ev.node_id,
        "node_label": ev.node_label,
        "node_type": ev.node_type,
        "status": "error",
        "output": {
            "error": ev.error,
            "message": f"Attempt {ev.attempt}/{ev.max_attempts} failed. Retrying in {wait}s.",
            **retry,
        },
        "execution_time_ms": 0.0,
        "error": ev.error,
        "metadata": {
            "sequence": _sequence(env),
            "stream_sequence": env.sequence,
            "retry_stage": "attempt_failed",
            "invocation_id": ev.failed_invocation_id,
            **retry,
        },
    }


def strip_private(outputs: Any) -> Any:
    """Keys starting with `_` are internal and never reach callers."""
    if isinstance(outputs, dict):
        return {k: v for k, v in outputs.items() if not str(k).startswith("_")}
    return outputs


def sse_frames(
    env: Envelope,
    *,
    workflow_id: str,
    node_messages: dict[str, str | None] | None = None,
) -> list[dict[str, Any]]:
    """The §2.13 frames one event produces (a pure node's start and end come together)."""
    ev = env.event
    messages = node_messages or {}
    if isinstance(ev, RunStarted):
        return [{"type": "execution_started", "execution_id": env.run_id}]
    if isinstance(ev, NodeDispatched | ChildRunStarted):
        return [_node_start(ev.node_id, ev.node_label, messages)]
    if isinstance(ev, TimerScheduled) and ev.purpose == "wait":
        return [_node_start(ev.node_id, ev.node_label, messages)]
    if isinstance(ev, NodeRetryScheduled):
        return [
            {
                "type": "node_retry",
                "node_id": ev.node_id,
                "node_label": ev.node_label,
                "attempt": ev.attempt + 1,
                "max_attempts": ev.max_attempts,
                "retry_result": retry_result(env, ev),
            }
        ]
    if isinstance(ev, NodeCompleted):
        frames: list[dict[str, Any]] = []
        if env.subject.split(".")[3] == "sched" and ev.status != "skipped":
            frames.append(_node_start(ev.node_id, ev.node_label, messages))
        result = node_result(env, ev)
        frames.append({"type": "node_complete", **result})
        if ev.node_type == "jsonOutputMapper" and ev.status == "success":
            # Heym streams every jsonOutputMapper's result as a final output at once.
            frames.append(_final_output(ev.node_id, ev.node_label, ev.node_type, ev.output, result))
        return frames
    if isinstance(ev, LlmCallRecorded | ToolCallRecorded | ContextCompressed):
        return [
            {
                "type": "agent_progress",
                "node_id": ev.node_id,
                "node_label": ev.node_label,
                "entry": entry,
            }
            for entry in agent_progress(env, ev)
        ]
    if isinstance(ev, SubAgentDispatched):
        return [_node_start(ev.node_id, ev.node_label, messages)]
    if isinstance(ev, RunOutputReady):
        label, output = next(iter(ev.outputs.items()), ("", None))
        return [
            {
                "type": "final_output",
                "node_id": ev.node_id,
                "node_label": label,
                "node_type": "output",
                "output": strip_private(output),
                "execution_time_ms": ev.execution_time_ms,
            }
        ]
    if isinstance(ev, RunCompleted | RunPaused):
        # A run paused for a human review ends its stream too, with status `pending`.
        return [
            {
                "type": "execution_complete",
                "workflow_id": workflow_id,
                "status": ev.status if isinstance(ev, RunCompleted) else "pending",
                "outputs": strip_private(ev.outputs),
                "execution_time_ms": ev.execution_time_ms,
            }
        ]
    return []


def _final_output(
    node_id: str, label: str, node_type: str, output: Any, result: dict[str, Any]
) -> dict[str, Any]:
    return {
        "type": "final_output",
        "node_id": node_id,
        "node_label": label,
        "node_type": node_type,
        "output": strip_private(output),
        "execution_time_ms": result["execution_time_ms"],
    }


def _stamp(env: Envelope) -> str:
    return env.recorded_at.isoformat()


def agent_progress(
    env: Envelope, ev: LlmCallRecorded | ToolCallRecorded | ContextCompressed
) -> list[dict[str, Any]]:
    """Heym's agent progress entries (§4.4): tool start/end/result phases, compressions."""
    if isinstance(ev, ContextCompressed):
        return [
            {
                "phase": "compression",
                "messages_compressed": ev.messages_compressed,
                "messages_before_count": ev.messages_before_count,
                "messages_after_count": ev.messages_after_count,
                "tokens_before": ev.tokens_before,
                "tokens_after": ev.tokens_after,
                "timestamp": _stamp(env),
            }
        ]
    if isinstance(ev, LlmCallRecorded):
        entries = []
        for call in ev.message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                args = json.loads(function.get("arguments") or "{}")
            except ValueError:
                args = {}
            safe: dict[str, Any] = {"keys": sorted(args) if isinstance(args, dict) else []}
            for key in ("workflow_id", "sub_agent_label"):
                if isinstance(args, dict) and key in args:
                    safe[key] = args[key]
            entries.append(
                {
                    "phase": "start",
                    "tool_call_id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": safe,
                    "timestamp": _stamp(env),
                }
            )
        return entries
    has_error = ev.status != "success"
    return [
        {
            "phase": "end",
            "tool_call_id": ev.tool_call_id,
            "name": ev.name,
            "timestamp": _stamp(env),
        },
        {
            "phase": "result",
            "tool_call_id": ev.tool_call_id,
            "name": ev.name,
            "result": {
                "has_error": has_error,
                "status": ev.status,
                "execution_time_ms": ev.elapsed_ms,
            },
            "timestamp": _stamp(env),
        },
    ]


def _node_start(node_id: str, label: str, messages: dict[str, str | None]) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "node_start", "node_id": node_id, "node_label": label}
    if node_id in messages:
        message = messages[node_id]
        if message is not None:
            frame["message"] = message
    else:
        frame["message"] = f"[START] {label}"
    return frame
