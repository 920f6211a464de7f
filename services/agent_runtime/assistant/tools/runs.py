"""Tools that run workflows (`execute_workflow`, `run_workflow_test`) and follow runs
(`wait_for_execution_update`): requests for real runs through the scheduler, and the
results and bounded reports built once a run's end is reported.

A run is started by appending its `RunRequested` (fixed run id, expected sequence 0, so a
repeated start after a restart changes nothing) with `report_to` set to the conversation:
the scheduler then appends the run's end there, and that event drives the next step.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from contracts import subjects
from contracts.base import Envelope
from contracts.chat import MAX_BUILD_TEST_RUNS
from contracts.nodes import NodeCompleted
from contracts.runs import RunEndReported, RunPauseReported, RunRequested, WorkflowSnapshot
from libs import telemetry
from libs.db.globals import global_values
from libs.eventlog import ConcurrencyConflict
from libs.results import node_result, strip_private
from libs.workflow import store
from services.agent_runtime.assistant import tracing
from services.agent_runtime.assistant.tools.env import ToolEnv
from services.agent_runtime.assistant.tools.workflows import input_fields

TRIGGER_SOURCE = "dashboard_chat"
_IMAGE_KEYS = ("image", "base64", "photo", "picture", "img")
_TEXT_KEYS = ("text", "document", "content", "file", "data")


def run_inputs(
    row: store.WorkflowRow, given: Any, attachment: dict[str, Any] | None
) -> dict[str, Any]:
    """The run's body: the model's inputs, the fields' defaults, and the attachment routed
    into the matching input (Heym §12.7: image/base64/photo/picture/img for an image,
    text/document/content/file/data for text, else the first input)."""
    body: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    if isinstance(given, str):
        body = {"text": given}
    for node in row.nodes:
        if isinstance(node, dict) and node.get("type") == "textInput":
            for f in (node.get("data") or {}).get("inputFields") or []:
                key = f.get("key") if isinstance(f, dict) else None
                if key and key not in body and "defaultValue" in f:
                    body[str(key)] = f["defaultValue"]
    if attachment and attachment.get("content"):
        keys = input_fields(row.nodes) or ["text"]
        wanted = _IMAGE_KEYS if attachment.get("kind") == "image" else _TEXT_KEYS
        key = next((k for k in keys if any(w in k.lower() for w in wanted)), keys[0])
        if attachment.get("kind") == "image" or not body.get(key):
            body[key] = attachment["content"]
    return body


async def request_run(
    env: ToolEnv,
    row: store.WorkflowRow,
    run_id: str,
    body: dict[str, Any],
    *,
    tool_call_id: str = "",
) -> RunRequested:
    cache = await store.workflow_cache(env.pool, env.owner_id, row)
    # The run is a child of the tool call that started it, in the chat turn's trace.
    tool_span = telemetry.header_of(
        tracing.tool_trace(env.conversation_id, env.turn.turn_id, tool_call_id)
        if tool_call_id
        else None
    )
    return RunRequested(
        globals=await global_values(env.pool, env.owner_id),
        workflow_id=row.id,
        workflow_name=row.name,
        owner_id=env.owner_id,
        nodes=row.nodes,
        edges=row.edges,
        inputs={"headers": {}, "query": {}, "body": body},
        test_run=False,  # build-mode test runs are real runs too (Heym, stated to the model)
        trigger_source=TRIGGER_SOURCE,
        requested_at_ms=int(time.time() * 1000),
        workflow_cache=cache
        or {row.id: WorkflowSnapshot(id=row.id, name=row.name, nodes=row.nodes, edges=row.edges)},
        timezone=env.turn.message.timezone or "UTC",
        report_to=subjects.chat_commands(env.conversation_id),
        traceparent=tool_span,
        run_traceparent=telemetry.header_of(telemetry.new_run_context(run_id, tool_span)),
        public_base_url=env.turn.message.public_base_url,
    )


async def start(env: ToolEnv, run_id: str, request: RunRequested) -> None:
    """Append the run's request once: a second start of the same run id changes nothing."""
    with contextlib.suppress(ConcurrencyConflict):
        await env.event_log.append(
            subjects.run_commands(run_id),
            [request],
            expected_sequence=0,
            message_id=f"run-{run_id}",
            correlation_id=run_id,
            traceparent=request.run_traceparent,
        )


async def node_results(env: ToolEnv, run_id: str) -> list[dict[str, Any]]:
    envelopes: list[Envelope] = await env.event_log.replay(run_id)
    rows = [node_result(e, e.event) for e in envelopes if isinstance(e.event, NodeCompleted)]
    return sorted(rows, key=lambda r: r["metadata"]["sequence"])


def execution_result(end: RunEndReported, results: list[dict[str, Any]]) -> dict[str, Any]:
    """`execute_workflow`'s result (Heym §12.2)."""
    out: dict[str, Any] = {
        "status": end.status,
        "outputs": strip_private(end.outputs),
        "node_results": [
            {
                "node_id": r["node_id"],
                "node_label": r["node_label"],
                "node_type": r["node_type"],
                "status": r["status"],
                "output": r["output"],
                "execution_time_ms": r["execution_time_ms"],
                "error": r["error"],
            }
            for r in results
        ],
        "execution_time_ms": end.execution_time_ms,
        "execution_history_id": end.run_id,
        "pending_review": None,
        "error": end.error,
    }
    return out


def pending_review(
    review: dict[str, Any], *, run_id: str, workflow_name: str, request_id: str = ""
) -> dict[str, Any]:
    """Heym's `pending_review` from a paused agent's pending payload."""
    return {
        "request_id": review.get("requestId") or request_id,
        "review_url": review.get("reviewUrl"),
        "summary": review.get("summary") or "",
        "draft_text": review.get("draftText") or "",
        "expires_at": review.get("expiresAt"),
        "execution_history_id": run_id,
        "workflow_name": workflow_name,
    }


def paused_result(pause: RunPauseReported, results: list[dict[str, Any]]) -> dict[str, Any]:
    """`execute_workflow`'s result for a run paused for a human review (`status: pending`)."""
    end = RunEndReported(
        run_id=pause.run_id,
        workflow_id=pause.workflow_id,
        workflow_name=pause.workflow_name,
        outputs=pause.outputs,
        execution_time_ms=pause.execution_time_ms,
    )
    out = execution_result(end, results)
    out["status"] = "pending"
    out["pending_review"] = pending_review(
        pause.review,
        run_id=pause.run_id,
        workflow_name=pause.workflow_name,
        request_id=pause.request_id,
    )
    return out


def pending_notice(result: dict[str, Any]) -> dict[str, Any]:
    """The `workflow_pending` stream frame (Heym §12.12 item 16): a run waits for review."""
    review = result.get("pending_review") or {}
    return {
        "type": "workflow_pending",
        "execution_history_id": result.get("execution_history_id"),
        "workflow_name": review.get("workflow_name"),
        "request_id": review.get("request_id"),
        "review_url": review.get("review_url"),
        "summary": review.get("summary"),
        "draft_text": review.get("draft_text"),
    }


async def review_for_run(env: ToolEnv, run_id: str, workflow_name: str) -> dict[str, Any] | None:
    """The pending review of one of the user's runs (itself or a child run), if any."""
    row = await env.pool.fetchrow(
        """SELECT request_id, review_url, summary, draft_text, expires_at
           FROM review_requests
           WHERE root_run_id = $1 AND owner_id = $2 AND status = 'pending'
                 AND expires_at > now()
           ORDER BY created_at DESC LIMIT 1""",
        run_id,
        env.owner_id,
    )
    if row is None:
        return None
    payload = {
        "requestId": row["request_id"],
        "reviewUrl": row["review_url"],
        "summary": row["summary"],
        "draftText": row["draft_text"],
        "expiresAt": row["expires_at"].isoformat(),
    }
    return pending_review(payload, run_id=run_id, workflow_name=workflow_name)


def _clip(value: Any, limit: int) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return value if len(text) <= limit else text[:limit] + "…"


def test_report(
    end: RunEndReported,
    results: list[dict[str, Any]],
    *,
    attempt: int,
    inputs: Any,
    expect: str,
    revision: int,
) -> dict[str, Any]:
    """`run_workflow_test`'s bounded report (Heym §12.5)."""
    nodes = []
    for r in results:
        if r["status"] == "skipped":
            continue
        node: dict[str, Any] = {
            "label": r["node_label"],
            "type": r["node_type"],
            "status": r["status"],
        }
        if r["error"]:
            node["error"] = _clip(r["error"], 1500)
        elif r["output"] not in (None, {}):
            node["output"] = _clip(r["output"], 1500)
        nodes.append(node)
    report: dict[str, Any] = {
        "attempt": attempt,
        "max_attempts": MAX_BUILD_TEST_RUNS,
        "status": end.status,
        "execution_time_ms": end.execution_time_ms,
        "inputs": _clip(inputs, 2000),
        "expect": expect,
        "nodes": nodes[:40],
        "outputs": _clip(strip_private(end.outputs), 4000),
        "execution_history_id": end.run_id,
        "test_runs_left": max(0, MAX_BUILD_TEST_RUNS - attempt),
        "revision": revision,
    }
    if end.error:
        report["error"] = end.error
    if attempt >= MAX_BUILD_TEST_RUNS:
        report["budget_spent"] = True
    return report


async def run_row(env: ToolEnv, run_id: str) -> Any:
    return await env.pool.fetchrow(
        """SELECT run_id, workflow_id, workflow_name, status, outputs, error,
                  execution_time_ms, requested_at, started_at
           FROM runs WHERE run_id = $1 AND owner_id = $2""",
        run_id,
        env.owner_id,
    )


async def run_nodes(env: ToolEnv, run_id: str) -> list[dict[str, Any]]:
    rows = await env.pool.fetch(
        """SELECT node_id, node_label, node_type, status, output, error, execution_time_ms
           FROM run_nodes WHERE run_id = $1 ORDER BY sequence LIMIT 200""",
        run_id,
    )
    return [dict(r) for r in rows]
