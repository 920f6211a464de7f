"""Flow nodes: consoleLog (log and pass through) and throwError."""

from __future__ import annotations

import logging

from libs.expressions import ExpressionError, render_template
from libs.nodes.outcome import Outcome
from libs.nodes.view import NodeView

log = logging.getLogger("heym.workflow.console")


def console_log(call: NodeView) -> Outcome:
    template = str(call.data.get("logMessage", ""))
    try:
        message = render_template(template, call.ctx)
    except ExpressionError as exc:
        return Outcome.fail(f"node {call.label!r} field logMessage {template!r}: {exc.message}")
    log.info("[%s] %s", call.label, message)
    return Outcome(output=call.first_input, metadata={"log": message})


def throw_error(call: NodeView) -> Outcome:
    """Fails the run on purpose; not retried (the failure is the node's intended result)."""
    template = str(call.data.get("errorMessage") or "Workflow error")
    try:
        message = render_template(template, call.ctx)
    except ExpressionError:
        message = template
    status = call.data.get("httpStatusCode")
    try:
        code = int(status) if status not in (None, "") else 500
    except (TypeError, ValueError):
        code = 500
    if not 400 <= code <= 599:
        code = 500
    return Outcome.fail(message, retryable=False, output={"httpStatusCode": code})
