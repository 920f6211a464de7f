"""Build mode's `save_workflow` and `finish` (Heym §12.5); `run_workflow_test` is a run tool
(`tools/runs.py`). The gate and budget are the pure `domain.build` fold."""

from __future__ import annotations

from typing import Any

from libs.chat import ToolCall
from services.agent_runtime.assistant.domain.build import finish_refusal, progress
from services.agent_runtime.assistant.dsl import NO_WORKFLOW, workflow_from_argument
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, error, text_arg
from services.agent_runtime.assistant.tools.save import save
from services.agent_runtime.assistant.tools.workflows import owned

BUDGET_SPENT = (
    "The test budget of this turn is spent: report what still fails and what you would change."
)


async def save_workflow(env: ToolEnv, call: ToolCall, args: dict[str, Any]) -> Outcome:
    p = progress(env.turn)
    if p.runs_left == 0:
        return Outcome({"status": "refused", "error": BUDGET_SPENT})
    wf = workflow_from_argument(args.get("workflow"), env.turn.message.content[:200])
    if wf is None:
        return Outcome({"status": "error", "error": NO_WORKFLOW})
    target_id = text_arg(args, "workflow_id") or p.workflow_id or ""
    target = await owned(env, target_id) if target_id else None
    if target_id and target is None:
        return error("Workflow not found")
    out = await save(env, call, wf, target=target, status="saved" if target else "created")
    if isinstance(out.result, dict) and out.result.get("status") in ("created", "saved"):
        out.result["test_runs_left"] = p.runs_left
    return out


async def finish(env: ToolEnv, call: ToolCall, args: dict[str, Any]) -> Outcome:
    p = progress(env.turn)
    refusal = finish_refusal(p)
    if refusal is not None:
        return Outcome({"status": "refused", "error": refusal})
    summary = text_arg(args, "summary") or f'Built and verified "{p.workflow_name}".'
    url = f"/workflows/{p.workflow_id}"
    verified = {
        "type": "verified",
        "summary": summary,
        "workflow_id": p.workflow_id,
        "workflow_name": p.workflow_name,
        "workflow_url": url,
        "test_runs": p.test_runs,
    }
    return Outcome(
        {"status": "success", "summary": summary, "workflow_id": p.workflow_id}, [verified]
    )
