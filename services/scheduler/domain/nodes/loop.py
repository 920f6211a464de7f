"""The loop node (`loop`/`done`): it reads the run's loop state, so it lives with the scheduler."""

from __future__ import annotations

from libs.expressions import ExpressionError, resolve_value
from libs.nodes import Outcome
from services.scheduler.domain.context import NodeCall


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
