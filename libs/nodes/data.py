"""Data nodes: merge (join of branches), set / jsonOutputMapper (mappings), variable ($vars)."""

from __future__ import annotations

from typing import Any

from libs.expressions import ExpressionError, resolve_value, stringify
from libs.nodes.outcome import Outcome
from libs.nodes.view import NodeView


def merge(call: NodeView) -> Outcome:
    """Waits for every live input (the ready set does that); skipped sources are left out."""
    merged = {
        label: output if isinstance(output, dict) else {"value": output}
        for label, output in call.inputs.items()
    }
    return Outcome(output={"merged": merged})


def resolve_mappings(call: NodeView, mappings: Any, field: str) -> dict[str, Any] | Outcome:
    out: dict[str, Any] = {}
    for i, mapping in enumerate(mappings if isinstance(mappings, list) else []):
        if not isinstance(mapping, dict):
            continue
        key = str(mapping.get("key", "")).strip()
        if not key:
            continue
        try:
            out[key] = resolve_value(mapping.get("value", ""), call.ctx)
        except ExpressionError as exc:
            return Outcome.fail(
                f"node {call.label!r} field {field}[{i}] ({key}) expression "
                f"{mapping.get('value')!r}: {exc.message}"
            )
    return out


def set_node(call: NodeView) -> Outcome:
    resolved = resolve_mappings(call, call.data.get("mappings"), "mappings")
    if isinstance(resolved, Outcome):
        return resolved
    return Outcome(output=resolved)


def coerce_variable(value: Any, kind: str) -> Any:
    """A variable node's value as its `variableType` says (Heym's coercions)."""
    if kind == "number" and isinstance(value, str):
        try:
            return float(value) if "." in value else int(value)
        except ValueError:
            return value
    if kind == "boolean" and isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    if kind == "boolean":
        return bool(value)
    if kind == "string" and not isinstance(value, str):
        return stringify(value) if value is not None else ""
    if kind == "array" and not isinstance(value, list):
        return [] if value is None else [value]
    if kind == "object" and not isinstance(value, dict):
        return {"value": value}
    return value


def variable(call: NodeView) -> Outcome:
    data = call.data
    name = str(data.get("variableName", "")).strip()
    if not name:
        return Outcome.fail(f"node {call.label!r} needs a variableName", retryable=False)
    raw = data.get("variableValue", "")
    kind = str(data.get("variableType") or "auto")
    ctx = call.ctx
    if kind == "array" and not isinstance(call.vars.get(name), list):
        # `$vars.list.add(x)` on a list not yet set starts it (Heym's append fast path).
        ctx = ctx.with_names({"vars": {**call.vars, name: []}})
    try:
        value = resolve_value(raw, ctx)
    except ExpressionError as exc:
        return Outcome.fail(
            f"node {call.label!r} field variableValue expression {raw!r}: {exc.message}"
        )
    value = coerce_variable(value, kind)
    # `isGlobal` values are persisted when the run ends (from its recorded results).
    metadata = {"global": True} if data.get("isGlobal") else {}
    return Outcome(output={"name": name, "value": value, "type": kind}, metadata=metadata)
