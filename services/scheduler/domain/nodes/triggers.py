"""Root nodes: textInput (the run's input), cron, sticky notes, and the error flow's handler."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from libs.expressions import render_template
from libs.nodes import Outcome
from services.scheduler.domain.context import NodeCall


def text_input(call: NodeCall) -> Outcome:
    """With run inputs: the `{headers, query, body}` envelope, body keys also at top level."""
    inputs = call.state.request.inputs
    if inputs:
        envelope: dict[str, Any] = {
            "headers": inputs.get("headers", {}),
            "query": inputs.get("query", {}),
            "body": inputs.get("body", {}),
        }
        body = envelope["body"]
        if isinstance(body, dict):
            merged = {**body, **envelope}
            return Outcome(output=merged)
        return Outcome(output=envelope)
    value = call.data.get("value")
    return Outcome(output={"text": value} if value not in (None, "") else {})


def cron(call: NodeCall) -> Outcome:
    """`{cron, triggered_at}`: a scheduled run's tick time, else the time the node ran."""
    request = call.state.request
    at_ms = request.requested_at_ms if request.trigger_source == "cron" else 0
    moment = datetime.fromtimestamp((at_ms or call.now_ms) / 1000, UTC).isoformat()
    return Outcome(output={"cron": call.data.get("cronExpression", ""), "triggered_at": moment})


def sticky(call: NodeCall) -> Outcome:
    data = call.data
    return Outcome(output={"note": data.get("note", data.get("text", ""))})


def error_handler(call: NodeCall) -> Outcome:
    failed = call.state.first_error
    error: dict[str, Any] = {}
    if failed is not None:
        error = {
            "node_id": failed.node_id,
            "node_label": failed.node_label,
            "node_type": failed.node_type,
            "message": failed.error or "",
        }
    output: dict[str, Any] = {"error": error}
    message = call.data.get("message")
    if isinstance(message, str) and message:
        output["message"] = render_template(message, call.ctx.with_names({"error": error}))
    return Outcome(output=output)
