"""The Execute node's child inputs (Heym §2.11: mappings, then executeInput, then first input)."""

from __future__ import annotations

from typing import Any

from libs.expressions import ExpressionError, resolve_value
from libs.nodes import Outcome
from libs.nodes.data import resolve_mappings
from services.scheduler.domain.context import NodeCall


def child_inputs(call: NodeCall) -> dict[str, Any] | Outcome:
    data = call.data
    mappings = data.get("executeInputMappings")
    if isinstance(mappings, list) and mappings:
        return resolve_mappings(call, mappings, "executeInputMappings")
    raw = data.get("executeInput")
    if isinstance(raw, str) and raw.strip():
        try:
            value = resolve_value(raw, call.ctx)
        except ExpressionError as exc:
            return Outcome.fail(f"node {call.label!r} field executeInput {raw!r}: {exc.message}")
        if isinstance(value, str):
            return {"text": value}
        if isinstance(value, dict):
            return value
        return {"value": value}
    first = call.first_input
    return dict(first) if isinstance(first, dict) else ({} if first is None else {"value": first})
