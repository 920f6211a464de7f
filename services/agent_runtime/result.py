"""The agent node's output (Heym §4.8) with per-call lifecycle fields and `tool_metrics`.

Tool records in the output are stored copies (history, SSE), so they are redacted and size
bounded; the loop and the model always see the originals.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from contracts.agents import ContextCompressed, ToolCallRecorded
from libs.observability.redaction import sanitize_tool_records
from services.agent_runtime.domain import AgentState, call_id

_STATUSES = ("success", "error", "pending", "timeout", "cancelled")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def tool_record(r: ToolCallRecorded, arguments: str = "") -> dict[str, Any]:
    """One tool call's record; `arguments` fills in what a child reporting its end omits."""
    record: dict[str, Any] = {
        "tool_call_id": r.tool_call_id,
        "name": r.name,
        "arguments": r.arguments or arguments,
        "result": r.result,
        "status": r.status,
        "source": r.source,
        "started_at": _iso(r.started_at_ms),
        "finished_at": _iso(r.finished_at_ms),
        "elapsed_ms": r.elapsed_ms,
    }
    record.update(
        {
            k: v
            for k, v in r.extra.items()
            if k in ("workflow_name", "mcp_server", "sub_agent_label")
        }
    )
    return record


def compression_record(c: ContextCompressed) -> dict[str, Any]:
    return {
        "name": "_context_compression",
        "arguments": {"messages_compressed": c.messages_compressed},
        "result": {"tokens_before": c.tokens_before, "tokens_after": c.tokens_after},
        "elapsed_ms": c.elapsed_ms,
    }


def tool_metrics(records: list[dict[str, Any]]) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "count": 0,
        **dict.fromkeys(_STATUSES, 0),
        "total_duration_ms": 0.0,
        "max_duration_ms": 0.0,
    }
    for r in records:
        if r.get("name") == "_context_compression":
            continue
        status = str(r.get("status")) if r.get("status") in _STATUSES else "error"
        metrics["count"] += 1
        metrics[status] += 1
        elapsed = float(r.get("elapsed_ms") or 0.0)
        metrics["total_duration_ms"] += elapsed
        metrics["max_duration_ms"] = max(metrics["max_duration_ms"], elapsed)
    return metrics


def records_in_order(state: AgentState) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for number, turn in enumerate(state.turns, start=1):
        if number in state.compressions:
            out.append(compression_record(state.compressions[number]))
        for call in turn.tool_calls:
            result = turn.results.get(call_id(call))
            if result is not None:
                function = call.get("function") or {}
                raw = function.get("arguments") if isinstance(function, dict) else None
                out.append(tool_record(result, raw if isinstance(raw, str) else ""))
    return out


def skills_used(state: AgentState) -> list[str]:
    """The skills the agent actually invoked, in first-use order (§4.2 step 9)."""
    names: dict[str, None] = {}
    skill_names = {
        t["name"]: str((t.get("meta") or {}).get("skill", {}).get("name") or t["name"])
        for t in (state.started.tools if state.started is not None else [])
        if t.get("source") == "skill"
    }
    for turn in state.turns:
        for result in turn.results.values():
            if result.source == "skill":
                names[skill_names.get(result.name, result.name)] = None
    return list(names)


def agent_output(
    state: AgentState, text: str, *, model: str, parsed: dict[str, Any] | None
) -> dict[str, Any]:
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    llm_ms = 0.0
    fallback = False
    for turn in state.turns:
        for k in usage:
            usage[k] += int(turn.llm.usage.get(k, 0))
        llm_ms += turn.llm.elapsed_ms
        fallback = fallback or turn.llm.fallback_used
    records = records_in_order(state)
    mcp_list_ms = state.started.mcp_list_ms if state.started is not None else 0.0
    sub_agent_ms = 0.0
    other_ms = 0.0
    for turn in state.turns:
        parallel = [r.elapsed_ms for r in turn.results.values() if r.source == "sub_agent"]
        sub_agent_ms += max(parallel, default=0.0)
        other_ms += sum(r.elapsed_ms for r in turn.results.values() if r.source != "sub_agent")
    output: dict[str, Any] = dict(parsed) if parsed is not None else {"text": text}
    output.update(
        {
            "model": model,
            "usage": usage,
            "elapsed_ms": llm_ms,
            "timing_breakdown": {
                "llm_ms": llm_ms,
                "tools_ms": sub_agent_ms + other_ms,
                "mcp_list_ms": mcp_list_ms,
            },
        }
    )
    if state.started is not None and state.started.mcp_list_ms:
        output["mcp_list_ms"] = mcp_list_ms
    used = skills_used(state)
    if used:
        output["skills_used"] = used
    if records:
        output["tool_calls"] = sanitize_tool_records(records)
        output["tool_metrics"] = tool_metrics(records)
    if fallback:
        output["fallbackUsed"] = True
    return output
