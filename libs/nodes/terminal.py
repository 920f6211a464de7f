"""The output node: shapes a run's result (`outputSchema`, or `message`, or the inputs)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from libs.expressions import ExpressionError, resolve_value
from libs.nodes.data import resolve_mappings
from libs.nodes.outcome import Outcome
from libs.nodes.view import NodeView


def output(call: NodeView) -> Outcome:
    data = call.data
    schema = data.get("outputSchema")
    if isinstance(schema, list) and schema:
        resolved = resolve_mappings(call, schema, "outputSchema")
        if isinstance(resolved, Outcome):
            return resolved
        return Outcome(output={"result": resolved})
    message = data.get("message")
    if isinstance(message, str) and message.strip():
        try:
            value: Any = resolve_value(message, call.ctx)
        except ExpressionError as exc:
            return Outcome.fail(f"node {call.label!r} field message {message!r}: {exc.message}")
        if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
            with contextlib.suppress(ValueError):  # a JSON-quoted string is unwrapped (Heym)
                value = json.loads(value)
        return Outcome(output={"result": value})
    return Outcome(output={"result": call.inputs})
