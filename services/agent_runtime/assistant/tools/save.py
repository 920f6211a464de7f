"""Saving a workflow the assistant wrote (create_workflow, edit_workflow, save_workflow).

The same checks as `POST/PUT /api/workflows` (`libs.workflow.fields`), after the credential
pass; the problems go back to the model. Saves are idempotent, because a tool whose result
was not recorded runs again after a restart: a new workflow gets an id fixed by the tool
call, and an update that changes nothing records no version.
"""

from __future__ import annotations

import uuid
from typing import Any

from libs.chat import ToolCall
from libs.schedules import cron_trigger, put_schedule
from libs.workflow import store
from libs.workflow.fields import checked_fields, problem_summary
from services.agent_runtime.assistant.dsl import apply_credentials, missing_named_credentials
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv
from services.agent_runtime.assistant.tools.runs import run_inputs
from services.agent_runtime.assistant.tools.workflows import input_fields

CREDENTIALS_NOTE = (
    "Some nodes need a credential: open the workflow in Heym and pick one for each node "
    "listed in credentials_to_assign_in_ui."
)

LINK_INSTRUCTIONS = (
    "The user must create these credentials in Heym first (they get a link to the credential "
    "page; never ask for the secret value). Tell them which credentials are missing and stop; "
    "save again when they say they exist."
)


async def owned_credentials(env: ToolEnv) -> dict[str, dict[str, str]]:
    rows = await env.pool.fetch(
        "SELECT id, name, type FROM credentials WHERE owner_id = $1 ORDER BY name",
        uuid.UUID(env.owner_id),
    )
    return {str(r["id"]): {"name": r["name"], "type": r["type"]} for r in rows}


async def save(
    env: ToolEnv,
    call: ToolCall,
    wf: dict[str, Any],
    *,
    target: store.WorkflowRow | None,
    status: str,
    goal: str = "",
) -> Outcome:
    """Check and store `wf` (new, or over `target`); the saved-workflow payload (Heym §12.4)."""
    owned = await owned_credentials(env)
    existing = {
        str(n.get("id")): n for n in (target.nodes if target else []) if isinstance(n, dict)
    }
    passed = apply_credentials(
        wf["nodes"],
        owned=owned,
        chat_credential_id=env.credential.id if env.credential else None,
        chat_model=env.model,
        mode=env.mode,
        existing=existing,
    )
    needs = list(passed.needs)
    if env.mode == "ask_via_link":
        needs = [{**n, "type": n.get("credential_types", ["openai"])[0]} for n in needs]
        needs += missing_named_credentials(passed.nodes, owned)
    if needs:
        return Outcome(
            {
                "status": "requires_credentials",
                "needs": needs,
                "instructions": LINK_INSTRUCTIONS
                if env.mode == "ask_via_link"
                else "Ask the user which credential each node should use (a "
                "single-choice heym-clarify question per service), then save again with "
                "credential_choices.",
            }
        )
    body = {**wf, "nodes": passed.nodes}
    fields, problems = checked_fields(body, target)
    if problems:
        return Outcome(
            {
                "status": "error",
                "status_code": 422,
                "detail": problems,
                "error": problem_summary(problems),
            }
        )
    async with env.pool.acquire() as conn, conn.transaction():
        if target is None:
            row = await store.insert_workflow(
                conn, env.owner_id, fields, workflow_id=uuid.UUID(env.fixed_id(call, "workflow"))
            )
        elif _unchanged(target, fields):
            row = target
        else:
            row = await store.update_workflow(conn, target, fields)
        # As POST/PUT /api/workflows: a cron workflow's schedule is written before the commit.
        await put_schedule(env.nc, row.id, cron_trigger(row.nodes))
    return Outcome(
        payload(env, row, status, goal, passed.to_assign),
        notices=[
            {
                "type": "workflow_created",
                "status": status,
                "workflow_id": row.id,
                "workflow_name": row.name,
                "workflow_url": f"/workflows/{row.id}",
            }
        ],
    )


def _unchanged(row: store.WorkflowRow, fields: dict[str, Any]) -> bool:
    return bool(
        row.name == fields["name"]
        and row.description == fields["description"]
        and row.nodes == fields["nodes"]
        and row.edges == fields["edges"]
    )


def payload(
    env: ToolEnv,
    row: store.WorkflowRow,
    status: str,
    goal: str,
    to_assign: list[dict[str, Any]],
) -> dict[str, Any]:
    url = f"/workflows/{row.id}"
    keys = input_fields(row.nodes)
    prefilled = run_inputs(row, {}, env.turn.message.attachment)
    if keys and goal and not prefilled.get(keys[0]):
        prefilled[keys[0]] = goal
    out: dict[str, Any] = {
        "status": status,
        "workflow_id": row.id,
        "workflow_name": row.name,
        "workflow_description": row.description,
        "workflow_url": url,
        "workflow_link_markdown": f"[{row.name}]({url})",
        "workflow_preview": {
            "id": row.id,
            "name": row.name,
            "description": row.description,
            "url": url,
            "nodes": row.nodes,
            "edges": row.edges,
        },
        "input_fields": keys,
        "run_inputs": prefilled,
        "version": row.version,
    }
    if to_assign:
        out["credentials_to_assign_in_ui"] = to_assign
        out["credentials_note"] = CREDENTIALS_NOTE
    return out
