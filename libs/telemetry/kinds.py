"""The span kinds of the seed, with their `heym.*` attributes and the OpenTelemetry GenAI
semantic conventions beside them: `heym.workflow.execute` (a run), `heym.node.execute` (a
node invocation), `heym.agent.tool.execute` (an agent's tool call), `chat <model>` (one model
request). Each also feeds the matching metric when metrics are on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from contracts.agents import LlmCallRecorded, ModelCallFailed, ToolCallRecorded
from contracts.nodes import NodeAttemptFailed, NodeCompleted
from contracts.runs import RunCompleted, RunRequested
from libs.observability.redaction import sanitize
from libs.telemetry import runtime
from libs.telemetry.context import TraceContext, run_span_id
from libs.telemetry.spans import Attributes, emit, ms_ns, record_metric

RUN_SPAN = "heym.workflow.execute"
NODE_SPAN = "heym.node.execute"
TOOL_SPAN = "heym.agent.tool.execute"
IO_LIMIT = 4096
_ERROR_TOOL_STATUSES = frozenset({"error", "timeout"})


@dataclass(frozen=True)
class ModelUsage:
    """What an llm or agent node used: its model and summed token counts."""

    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def attributes(self) -> dict[str, Any]:
        return {
            "heym.llm.model": self.model or None,
            "heym.llm.prompt_tokens": self.prompt_tokens,
            "heym.llm.completion_tokens": self.completion_tokens,
            "heym.llm.total_tokens": self.total_tokens,
            "gen_ai.request.model": self.model or None,
            "gen_ai.usage.input_tokens": self.prompt_tokens,
            "gen_ai.usage.output_tokens": self.completion_tokens,
        }


def captured(value: Any) -> str:
    """A node's input or output as a span attribute: redacted, bounded, JSON."""
    text = json.dumps(sanitize(value, max_string=1024), default=str, ensure_ascii=False)
    return text if len(text) <= IO_LIMIT else text[: IO_LIMIT - 1] + "…"


def workflow_span(
    run_id: str,
    request: RunRequested,
    run: TraceContext | None,
    *,
    started_at_ms: int,
    done: RunCompleted,
) -> None:
    """The run's root span, written when the run ends (its start as recorded)."""
    start = request.requested_at_ms or started_at_ms or done.finished_at_ms
    end = done.finished_at_ms or start
    record_metric("run", done.status, float(max(0, end - start)))
    parent = TraceContext.parse(request.traceparent)
    emit(
        RUN_SPAN,
        run,
        parent.span_id if parent is not None and run is not None else None,
        start_ns=ms_ns(start),
        end_ns=ms_ns(end),
        attributes={
            "heym.workflow.id": request.workflow_id,
            "heym.workflow.name": request.workflow_name or None,
            "heym.node.count": len(request.nodes),
            "heym.workflow.test_mode": request.test_run,
            "heym.sub_workflow.depth": request.depth,
            "heym.workflow.status": done.status,
            "heym.run.id": run_id,
            "heym.trigger.source": request.trigger_source,
        },
        error=(done.error or "the run failed") if done.status == "error" else None,
        remote_parent=parent is not None,
    )


def node_span(
    run_id: str,
    result: NodeCompleted | NodeAttemptFailed,
    ctx: TraceContext | None,
    *,
    parent_span_id: int | None = None,
    start_ms: int | None = None,
    usage: ModelUsage | None = None,
    inputs: Any = None,
    operation: str | None = None,
) -> None:
    """One node invocation (a try: a retried node has one span per attempt). The parent is
    the run span unless given (a sub-agent's parent is its orchestrator's tool span)."""
    start = start_ms if start_ms is not None else (result.started_at_ms or result.finished_at_ms)
    end = max(result.finished_at_ms, start)
    status = "error" if isinstance(result, NodeAttemptFailed) else result.status
    record_metric("node", result.node_type, status, float(end - start))
    if ctx is None or not ctx.sampled or runtime.current().pipeline is None:
        return
    attributes: dict[str, Any] = {
        "heym.node.id": result.node_id,
        "heym.node.type": result.node_type,
        "heym.node.label": result.node_label,
        "heym.node.status": status,
        "heym.node.duration_ms": float(end - start),
        "heym.node.attempt": result.attempt,
        "heym.invocation.id": result.invocation_id,
    }
    if usage is not None:
        attributes.update(usage.attributes())
    if operation is not None:
        attributes["gen_ai.operation.name"] = operation
        if operation == "invoke_agent":
            attributes["gen_ai.agent.name"] = result.node_label
    if runtime.current().capture_io:
        if inputs is not None:
            attributes["heym.node.input"] = captured(inputs)
        attributes["heym.node.output"] = captured(result.output)
    error = result.error if status == "error" else None
    emit(
        NODE_SPAN,
        ctx,
        parent_span_id if parent_span_id is not None else run_span_id(run_id),
        start_ns=ms_ns(start),
        end_ns=ms_ns(end),
        attributes=attributes,
        error=(error or "the node failed") if status == "error" else None,
    )


def tool_span(
    record: ToolCallRecorded,
    ctx: TraceContext | None,
    agent: TraceContext | None,
    *,
    arguments: str | None = None,
) -> None:
    """One tool call of an agent, under the agent's span. Arguments and results are never
    attached, only their sizes."""
    record_metric("tool", record.source, record.status)
    if ctx is None or agent is None:
        return
    args = record.arguments if arguments is None else arguments
    result = record.result if isinstance(record.result, str) else _json(record.result)
    extra = record.extra or {}
    mcp = extra.get("mcp_server") or extra.get("server_label")
    attributes: Attributes = {
        "heym.agent.tool.name": record.name,
        "heym.agent.tool.call_id": record.tool_call_id or None,
        "heym.agent.tool.source": record.source,
        "heym.agent.tool.mcp_server": str(mcp) if mcp else None,
        "heym.agent.tool.iteration": record.turn,
        "heym.agent.tool.args_bytes": len(args.encode()),
        "heym.agent.tool.result_bytes": len(result.encode()),
        "heym.agent.tool.status": record.status,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": record.name,
        "gen_ai.tool.call.id": record.tool_call_id or None,
        # A human review (HITL) call: its request and the reviewer's decision.
        "heym.review.request_id": str(extra["request_id"]) if extra.get("request_id") else None,
        "heym.review.decision": str(extra["decision"]) if extra.get("decision") else None,
    }
    error = None
    if record.status in _ERROR_TOOL_STATUSES:
        error = _error_text(record.result) or f"the tool call ended with {record.status}"
    emit(
        TOOL_SPAN,
        ctx,
        agent.span_id,
        start_ns=ms_ns(record.started_at_ms),
        end_ns=ms_ns(max(record.finished_at_ms, record.started_at_ms)),
        attributes=attributes,
        error=error,
    )


def chat_span(
    event: LlmCallRecorded | ModelCallFailed,
    ctx: TraceContext | None,
    agent: TraceContext | None,
    *,
    end_ms: int,
    model: str = "",
) -> None:
    """One model request (GenAI `chat`): its answer's usage, or its failure."""
    if isinstance(event, LlmCallRecorded):
        name = event.model or model
        prompt = int(event.usage.get("prompt_tokens", 0))
        completion = int(event.usage.get("completion_tokens", 0))
        record_metric("tokens", name, prompt, completion)
    else:
        name = event.model or model
    if ctx is None or agent is None:
        return
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model or name or None,
        "heym.llm.turn": event.turn,
        "heym.llm.attempt": event.attempt,
    }
    error = None
    if isinstance(event, LlmCallRecorded):
        attributes.update(
            {
                "gen_ai.response.model": event.model or None,
                "gen_ai.usage.input_tokens": prompt,
                "gen_ai.usage.output_tokens": completion,
                "heym.llm.model": name or None,
                "heym.llm.fallback": event.fallback_used,
            }
        )
        if event.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = event.finish_reason
    else:
        attributes["error.type"] = str(event.status_code or "request_failed")
        error = event.error
    elapsed = event.elapsed_ms
    emit(
        f"chat {name}" if name else "chat",
        ctx,
        agent.span_id,
        kind="client",
        start_ns=ms_ns(end_ms - elapsed),
        end_ns=ms_ns(end_ms),
        attributes=attributes,
        error=error,
    )


def _json(value: Any) -> str:
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


def _error_text(result: Any) -> str | None:
    if isinstance(result, dict) and result.get("error"):
        return str(result["error"])
    return None
