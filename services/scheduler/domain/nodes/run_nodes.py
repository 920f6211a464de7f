"""disableNode: it reads the workflow graph, so it lives with the scheduler."""

from __future__ import annotations

from libs.nodes import Outcome
from services.scheduler.domain.context import NodeCall


def disable_node(call: NodeCall) -> Outcome:
    """Skips `targetNodeLabel` for the rest of this run; the stored workflow is not changed
    (Heym also wrote `active: false` into the saved workflow, a surprise we do not copy)."""
    target = str(call.data.get("targetNodeLabel", ""))
    if target not in call.state.graph.by_label:
        return Outcome.fail(f"node {call.label!r}: no node labelled {target!r}", retryable=False)
    return Outcome(output={"disabledNode": target})
