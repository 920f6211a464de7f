"""What a decision derives for a dispatch: deterministic ids, an agent's context, masking,
and lenient reading of numeric node settings (pure helpers of `decide`)."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from contracts.runs import WorkflowSnapshot
from libs.secrets.masking import Masker
from services.scheduler.domain.state import RunState

_CHILD_NS = uuid.UUID("5b0b6c9e-3c1e-4d55-9d1a-7a4f3e2b1c0d")


def child_run_id(run_id: str, invocation_id: str) -> str:
    return uuid.uuid5(_CHILD_NS, f"{run_id}:{invocation_id}").hex


def idempotency_key(run_id: str, node_id: str, invocation_id: str, attempt: int) -> str:
    raw = f"{run_id}:{node_id}:{invocation_id}:{attempt}".encode()
    return hashlib.sha256(raw).hexdigest()[:32]


def masker(s: RunState) -> Masker:
    """Masks the owner's credential values in everything a decision records."""
    return Masker(s.credentials.values())


def agent_context(s: RunState, nid: str) -> dict[str, Any]:
    """What an agent needs beyond its node: the workflow and the sub-workflows it may call."""
    if s.graph.types[nid] != "agent":
        return {}
    request = s.request
    # Every agent of the workflow may run as this one's sub-agent, and each gets the
    # sub-workflows its own node lists: pass the snapshots of all of them.
    allowed = {
        str(w)
        for n, t in s.graph.types.items()
        if t == "agent"
        for w in (s.graph.data[n].get("subWorkflowIds") or [])
    }
    return {
        "workflow": WorkflowSnapshot(
            id=request.workflow_id,
            name=request.workflow_name,
            nodes=request.nodes,
            edges=request.edges,
        ),
        "sub_workflows": {
            w: request.workflow_cache[w] for w in sorted(allowed) if w in request.workflow_cache
        },
    }


def number(value: Any, default: int) -> int:
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return default


def seconds(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default
