"""Branching nodes: condition (`true`/`false`) and switch (`case-i`/`default`)."""

from __future__ import annotations

from typing import Any

from libs.expressions import ExpressionError, evaluate_condition, resolve_value, stringify
from libs.nodes.outcome import Outcome
from libs.nodes.view import NodeView


def condition(call: NodeView) -> Outcome:
    """Heym routes an expression that fails to evaluate to `false`, never to a node error."""
    text = call.data.get("condition", "true")
    try:
        result = evaluate_condition(str(text) if text is not None else "true", call.ctx)
    except ExpressionError:
        result = False
    return Outcome(output={"branch": "true" if result else "false"})


def _cases(raw: Any) -> list[str]:
    if isinstance(raw, str):
        return [c.strip() for c in raw.split(",") if c.strip()]
    if isinstance(raw, list):
        out = []
        for c in raw:
            value = c.get("value", c.get("label")) if isinstance(c, dict) else c
            out.append(stringify(value).strip() if value is not None else "")
        return out
    return []


def switch(call: NodeView) -> Outcome:
    expression = call.data.get("expression") or "$input.text"
    try:
        value = resolve_value(expression, call.ctx)
    except ExpressionError as exc:
        return Outcome.fail(f"switch expression {expression!r}: {exc.message}")
    text = stringify(value) if value is not None else ""
    for i, case in enumerate(_cases(call.data.get("cases"))):
        if text == case:
            return Outcome(output={"branch": f"case-{i}", "value": value})
    return Outcome(output={"branch": "default", "value": value})
