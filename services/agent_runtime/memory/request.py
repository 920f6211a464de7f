"""The extraction work item an agent run leaves behind (Heym §7): after a successful,
non-pending run whose node keeps memory (or writes a graph shared with it), one item per
invocation with the run's bounded transcript."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from contracts import subjects
from contracts.memory import MemoryExtractionRequested
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import AgentState

MAX_ARGUMENTS: Final = 4000
MAX_RESULT: Final = 8000
MAX_TRANSCRIPT: Final = 24_000
_META: Final = {
    "model",
    "usage",
    "elapsed_ms",
    "timing_breakdown",
    "tool_calls",
    "tool_metrics",
    "fallbackUsed",
}


def item_id(invocation_id: str) -> str:
    """The work item's id (one subject token), derived from the invocation: one per run."""
    plain = f"memory-{invocation_id}"
    if len(plain) <= 128:
        return plain
    return "memory-" + hashlib.sha256(invocation_id.encode()).hexdigest()[:40]


def extraction_subject(call: AgentCall) -> str:
    return subjects.work_item(call.run_id, "agent_runtime", item_id(call.invocation_id))


def extraction_request(call: AgentCall, state: AgentState) -> MemoryExtractionRequested | None:
    started, finished = state.started, state.finished
    if started is None or finished is None or finished.status != "success":
        return None
    targets = [t for t in started.memory if t.permission in ("own", "write")]
    if not targets:
        return None
    output = finished.output if isinstance(finished.output, dict) else {}
    if output.get("status") == "pending" or output.get("pending"):
        return None  # paused for a human review: extracted once it really ends
    user = next(
        (str(m.get("content")) for m in reversed(started.messages) if m.get("role") == "user"),
        "",
    )
    text = transcript(user, output)
    if len(text.strip()) < 8:
        return None
    return MemoryExtractionRequested(
        item_id=item_id(call.invocation_id),
        invocation_id=call.invocation_id,
        node_id=call.node_id,
        node_label=call.node_label,
        workflow_id=call.workflow_id,
        owner_id=call.owner_id,
        credential_id=str(call.data.get("credentialId") or started.credential_id or ""),
        model=str(call.data.get("model") or started.model),
        targets=targets,
        transcript=text,
        turn=len(state.turns),
        requested_at_ms=finished.finished_at_ms,
    )


def transcript(user: str, output: dict[str, Any]) -> str:
    """The user message, the final reply and each tool call (arguments cut at 4,000 and
    results at 8,000 characters; compressions skipped), at most 24,000 characters in all.
    Tool records are the output's stored copies, so secrets are already redacted."""
    parts = [f"User task / input:\n{user}\n"]
    reply = output.get("text")
    if not isinstance(reply, str):
        rest = {k: v for k, v in output.items() if k not in _META}
        reply = json.dumps(rest, ensure_ascii=False, default=str) if rest else ""
    if reply.strip():
        parts.append(f"Assistant final reply:\n{reply.strip()}\n")
    for record in output.get("tool_calls") or []:
        if not isinstance(record, dict) or record.get("name") in (None, "_context_compression"):
            continue
        arguments = _text(record.get("arguments"))[:MAX_ARGUMENTS]
        result = _text(record.get("result"))[:MAX_RESULT]
        parts.append(f"Tool {record['name']}:\nArguments: {arguments}\nResult: {result}\n")
    text = "\n".join(parts)
    if len(text) > MAX_TRANSCRIPT:
        text = text[:MAX_TRANSCRIPT] + "\n…"
    return text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
