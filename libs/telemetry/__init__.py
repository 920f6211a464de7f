"""OpenTelemetry for every service: one trace per run across processes, NATS hops and pauses.

Services call `configure` once when they start and `shutdown` when they stop; the edges
(actors, effects, handlers, step executors) write spans with the kind helpers once the work's
end is recorded in the log. Span ids are derived from run, invocation and tool-call ids
(`context`), so no span is ever held open and every process agrees on every parent.
"""

from libs.telemetry.config import configuration
from libs.telemetry.context import (
    TraceContext,
    chat_span_id,
    header_of,
    node_context,
    node_span_id,
    run_span_id,
    tool_context,
    tool_span_id,
)
from libs.telemetry.kinds import (
    NODE_SPAN,
    RUN_SPAN,
    TOOL_SPAN,
    ModelUsage,
    chat_span,
    node_span,
    tool_span,
    workflow_span,
)
from libs.telemetry.runtime import (
    Telemetry,
    configure,
    current,
    new_run_context,
    run_context,
    shutdown,
    status,
)
from libs.telemetry.spans import record_metric

__all__ = [
    "NODE_SPAN",
    "RUN_SPAN",
    "TOOL_SPAN",
    "ModelUsage",
    "Telemetry",
    "TraceContext",
    "chat_span",
    "chat_span_id",
    "configuration",
    "configure",
    "current",
    "header_of",
    "new_run_context",
    "node_context",
    "node_span",
    "node_span_id",
    "record_metric",
    "run_context",
    "run_span_id",
    "shutdown",
    "status",
    "tool_context",
    "tool_span",
    "tool_span_id",
    "workflow_span",
]
