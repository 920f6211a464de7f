"""Tool results: their status, one-line summaries, and the sanitised copy the model receives.

Pure functions (Heym §12.2, §12.7.3): an explicit `status` in a result is normalised and
used, else a top-level `error` means error, else a nested `execution.status`, else success.
The model never receives images (a placeholder instead), nor more than 96k characters.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from contracts.chat import MAX_BUILD_TEST_RUNS

MAX_RESULT_CHARS: Final = 96_000
# What a recorded tool result may hold (the model never gets more than MAX_RESULT_CHARS; the
# record keeps more for the UI and history, but not without bound).
MAX_RECORDED_CHARS: Final = 256_000
SUMMARY_ERROR_CHARS: Final = 150
IMAGE_PLACEHOLDER: Final = "[image omitted - see workflow execution in UI]"
_DATA_IMAGE = re.compile(r"^data:image/[a-zA-Z0-9.+-]+;base64,", re.ASCII)

_SUCCESS = {
    "success",
    "succeeded",
    "ok",
    "completed",
    "created",
    "edited",
    "saved",
    "verified",
    "resolved",
}
_ERROR = {"error", "failed", "failure"}
_PENDING = {"pending", "requires_credentials", "requires_data_table", "waiting"}


def tool_status(result: Any) -> str:
    if isinstance(result, dict):
        explicit = result.get("status")
        if isinstance(explicit, str) and explicit:
            return _normalise(explicit)
        if result.get("error"):
            return "error"
        execution = result.get("execution")
        if isinstance(execution, dict) and isinstance(execution.get("status"), str):
            return _normalise(execution["status"])
    return "success"


def _normalise(status: str) -> str:
    s = status.strip().lower()
    if s in _SUCCESS:
        return "success"
    if s in _ERROR:
        return "error"
    if s in ("cancelled", "canceled"):
        return "cancelled"
    if s in _PENDING:
        return "pending"
    if s in ("running", "refused"):
        return s
    return "success"


def summary(name: str, result: Any, status: str) -> str:
    """The one-line `response_summary` of a tool call (the step card and run steps)."""
    r = result if isinstance(result, dict) else {}
    if name == "run_workflow_test" and "attempt" in r:
        seconds = float(r.get("execution_time_ms") or 0) / 1000
        return (
            f"Attempt {r.get('attempt', 0)}/{MAX_BUILD_TEST_RUNS} · "
            f"{r.get('status', status)} in {seconds:.1f}s"
        )
    if status == "error" or (status == "refused" and r.get("error")):
        text = str(r.get("error") or r.get("detail") or "failed")
        prefix = "Refused: " if status == "refused" else "Error: "
        return (prefix + text)[:SUMMARY_ERROR_CHARS]
    if name == "list_workflows":
        return f"{r.get('count', 0)} workflow(s) listed"
    if name in ("execute_workflow", "wait_for_execution_update"):
        return _status_line(r)
    if name == "create_workflow":
        return f"Created workflow: {r.get('workflow_name', '')}"
    if name == "edit_workflow":
        return f"Updated workflow: {r.get('workflow_name', '')}"
    if name == "save_workflow":
        if r.get("status") == "created":
            return f'Created "{r.get("workflow_name", "")}"'
        if r.get("status") == "saved":
            return f'Saved "{r.get("workflow_name", "")}" · version {r.get("version", 1)}'
        return f"Status: {r.get('status', status)}"
    if name == "get_workflow_run_history" and "total_runs" in r:
        return f"{r.get('total_runs', 0)} run(s), {r.get('returned', 0)} listed"
    if name == "get_workflow_definition":
        nodes, edges = r.get("nodes"), r.get("edges")
        return (
            f"{len(nodes) if isinstance(nodes, list) else 0} node(s), "
            f"{len(edges) if isinstance(edges, list) else 0} edge(s)"
        )
    if name == "get_recent_executions":
        return f"{r.get('count', 0)} execution(s)"
    if name == "get_active_executions":
        return f"{r.get('running_count', 0)} running, {r.get('pending_count', 0)} pending"
    if name == "get_analytics_stats":
        return f"{r.get('total_executions', 0)} execution(s) · {r.get('success_rate', 0)}% success"
    if name == "search_documentation":
        results = r.get("results")
        return f"{len(results) if isinstance(results, list) else 0} result(s)"
    if name == "get_schedule_events":
        return f"{r.get('total', 0)} scheduled run(s)"
    if name == "get_global_variables":
        if "variables" in r:
            return f"{len(r['variables'])} variable(s)"
        return f"{r.get('name', '')}: {r.get('value_type', '')}"
    if name == "finish":
        return "Verified" if status == "success" else f"Status: {status}"
    if name == "resolve_hitl_review" and r.get("decision"):
        return f"Review {r['decision']} · {r.get('workflow_name', '')}"
    return f"Status: {status}"


def _status_line(r: dict[str, Any]) -> str:
    line = f"Status: {r.get('status', 'unknown')}"
    outputs = r.get("outputs")
    if isinstance(outputs, dict) and outputs:
        key, value = next(iter(outputs.items()))
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        line += f" · {key}: {shown}"
    return line[:SUMMARY_ERROR_CHARS]


def for_model(result: Any) -> str:
    """The tool message the model receives: images replaced, pending cut to its review,
    anything over 96k characters replaced by a truncation notice."""
    value = _without_images(result)
    if isinstance(value, dict) and value.get("pending_review"):
        value = {"status": "pending", "pending_review": value["pending_review"]}
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > MAX_RESULT_CHARS:
        text = json.dumps(
            {
                "truncated": True,
                "summary": text[:2000],
                "original_length": len(text),
            }
        )
    return text


def bounded(result: Any) -> Any:
    """A result small enough to record: as is, or its top-level scalars (status, ids, error)
    with the start of its JSON and its original length."""
    text = json.dumps(result, default=str)
    if len(text) <= MAX_RECORDED_CHARS:
        return result
    kept: dict[str, Any] = {}
    if isinstance(result, dict):
        for key, value in result.items():
            scalar = isinstance(value, bool | int | float) or value is None
            if scalar or (isinstance(value, str) and len(value) <= 1000):
                kept[key] = value
    return {**kept, "truncated": True, "summary": text[:8000], "original_length": len(text)}


def _without_images(value: Any, depth: int = 0) -> Any:
    if depth > 32:
        return value
    if isinstance(value, str):
        return IMAGE_PLACEHOLDER if _DATA_IMAGE.match(value) else value
    if isinstance(value, dict):
        return {k: _without_images(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_images(v, depth + 1) for v in value]
    return value


def images_in(result: Any, limit: int = 8) -> list[str]:
    """Images a result carries (for the UI's `tool_output`), never sent to the model."""
    found: list[str] = []

    def walk(value: Any, depth: int) -> None:
        if len(found) >= limit or depth > 32:
            return
        if isinstance(value, str) and _DATA_IMAGE.match(value):
            if value not in found:
                found.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v, depth + 1)
        elif isinstance(value, list):
            for v in value:
                walk(v, depth + 1)

    walk(result, 0)
    return found
