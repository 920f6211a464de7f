"""Branching nodes: condition (`true`/`false`), switch (`case-i`/`default`), loop."""

from __future__ import annotations

from typing import Any

from libs.expressions import ExpressionError, evaluate_condition, resolve_value, stringify
from services.scheduler.domain.context import NodeCall
from services.scheduler.domain.nodes.outcome import Outcome


def condition(call: NodeCall) -> Outcome:
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


def switch(call: NodeCall) -> Outcome:
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


def loop(call: NodeCall) -> Outcome:
    """One entry of a loop node: the first resolves the array, each re-entry (after the body's
    loop-back fired) collects the loop-back input and moves to the next item."""
    state = call.state
    current = state.loops.get(call.node_id)
    if current is None or call.node_id not in state.rearmed:
        expression = call.data.get("arrayExpression") or "$input"
        try:
            value = resolve_value(expression, call.ctx)
        except ExpressionError as exc:
            return Outcome.fail(f"loop arrayExpression {expression!r}: {exc.message}")
        items = [] if value is None else value if isinstance(value, list) else [value]
        index, results = 0, []
    else:
        items = current.items
        index = current.index + 1
        results = [*current.results, state.loop_back.get(call.node_id)]
    total = len(items)
    book = {"items": items, "index": index, "total": total, "results": results}
    if index >= total:
        return Outcome(
            output={"results": results, "total": total, "branch": "done"},
            metadata={"loop": book},
        )
    output = {
        "item": items[index],
        "index": index,
        "total": total,
        "isFirst": index == 0,
        "isLast": index == total - 1,
        "branch": "loop",
    }
    return Outcome(output=output, metadata={"loop": book})
