"""`create_workflow` and `edit_workflow`: the AI-Builder path (Heym §12.4). A second model call
with the builder prompt writes the DSL; it is extracted tolerantly, passed through the
credential pass and the API's checks, and saved (an edit keeps a version). Nothing runs."""

from __future__ import annotations

import json
from typing import Any

from libs.chat import ToolCall
from libs.workflow import store
from services.agent_runtime.assistant.dsl import NO_WORKFLOW, extract_workflow
from services.agent_runtime.assistant.prompt_text import (
    BUILDER_INSTRUCTIONS,
    builder_system_prompt,
)
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, error, text_arg
from services.agent_runtime.assistant.tools.save import owned_credentials, save
from services.agent_runtime.assistant.tools.workflows import light, owned
from services.agent_runtime.model import ModelError

BUILDER_MAX_TOKENS = 8000


async def _write(env: ToolEnv, system: str, user: str) -> str | Outcome:
    if env.credential is None:
        return error("No model credential is available for the builder")
    try:
        reply = await env.models.chat(
            env.credential,
            model=env.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=0.0,
            max_tokens=BUILDER_MAX_TOKENS,
        )
    except ModelError as exc:
        return error(f"AI Builder failed: {exc}")
    return str(reply.message.get("content") or "")


async def _prompt(env: ToolEnv, current: store.WorkflowRow | None) -> str:
    rows = await store.list_workflows(env.pool, env.owner_id)
    creds = await owned_credentials(env)
    return builder_system_prompt(
        workflows=[light(r) for r in rows if current is None or r.id != current.id],
        current=(
            {
                "name": current.name,
                "description": current.description,
                "nodes": current.nodes,
                "edges": current.edges,
            }
            if current is not None
            else None
        ),
        credentials=[{"id": k, **v} for k, v in creds.items()],
    )


def _extras(args: dict[str, Any]) -> str:
    parts = []
    if isinstance(args.get("inputs"), dict) and args["inputs"]:
        parts.append(f"Inputs the user gave: {json.dumps(args['inputs'])[:4000]}")
    if isinstance(args.get("credential_choices"), list) and args["credential_choices"]:
        parts.append(f"Credential choices: {json.dumps(args['credential_choices'])[:2000]}")
    return "\n".join(parts)


async def create_workflow(env: ToolEnv, call: ToolCall, args: dict[str, Any]) -> Outcome:
    goal = text_arg(args, "goal")
    if not goal:
        return error("goal must not be empty")
    text = await _write(
        env,
        await _prompt(env, None),
        f"{BUILDER_INSTRUCTIONS}\n\nGoal: {goal}\n{_extras(args)}",
    )
    if isinstance(text, Outcome):
        return text
    wf = extract_workflow(text, goal)
    if wf is None:
        return Outcome({"status": "error", "error": NO_WORKFLOW})
    return await save(env, call, wf, target=None, status="created", goal=goal)


async def edit_workflow(env: ToolEnv, call: ToolCall, args: dict[str, Any]) -> Outcome:
    row = await owned(env, text_arg(args, "workflow_id"))
    if row is None:
        return error("Workflow not found")
    instructions = text_arg(args, "instructions")
    if not instructions:
        return error("instructions must not be empty")
    text = await _write(
        env,
        await _prompt(env, row),
        f"{BUILDER_INSTRUCTIONS}\nChange the current workflow; keep its ids, credentials, "
        f"models and skills.\n\nInstructions: {instructions}\n{_extras(args)}",
    )
    if isinstance(text, Outcome):
        return text
    wf = extract_workflow(text, instructions)
    if wf is None:
        return Outcome({"status": "error", "error": NO_WORKFLOW})
    if not (isinstance(text, str) and '"name"' in text):
        wf["name"] = row.name
    return await save(env, call, wf, target=row, status="edited", goal=instructions)
