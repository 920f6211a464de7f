"""The tool sandbox's spans: the `heym.node.execute` span of each node invocation it runs
(an `http` node), written once its result is recorded. An agent's tool calls run here under
the tool call's span (the work item's `traceparent`), which the agent runtime writes."""

from __future__ import annotations

from contracts.base import Envelope
from contracts.nodes import NodeAttemptFailed, NodeCompleted, NodeDispatched
from libs import telemetry
from libs.telemetry import TraceContext


def node_ran(
    env: Envelope,
    ev: NodeDispatched,
    result: NodeCompleted | NodeAttemptFailed,
    span: TraceContext | None,
) -> None:
    if not telemetry.current().enabled:
        return
    parent = TraceContext.parse(env.traceparent)  # the run's span, named by the dispatch
    telemetry.node_span(
        env.run_id,
        result,
        span,
        parent_span_id=parent.span_id if parent is not None else None,
        inputs=ev.inputs,
    )
