"""`resolve_hitl_review`: the user's decision on a pending review of one of their runs, taken
through the same decision function as the review page (`libs.review.decisions`), so a
decision here and one on the page cannot both win."""

from __future__ import annotations

import re
from typing import Any

from libs.review.decisions import (
    DecisionRefused,
    Found,
    find,
    find_for_owner,
    record_decision,
    validate,
)
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, error, text_arg

_TOKEN_IN_URL = re.compile(r"/review/([A-Za-z0-9_-]{1,128})/?(?:[?#].*)?$")


async def _found(env: ToolEnv, args: dict[str, Any]) -> Found | None:
    request_id = text_arg(args, "request_id")
    if request_id:
        return await find_for_owner(env.pool, env.event_log, request_id, env.owner_id)
    url = text_arg(args, "review_url")
    match = _TOKEN_IN_URL.search(url)
    if match is None:
        return None
    found = await find(env.pool, env.event_log, match.group(1))
    if found is None or str(found.row["owner_id"]) != env.owner_id:
        return None  # another user's review is not the user's to decide
    return found


async def resolve_hitl_review(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    if not text_arg(args, "request_id") and not text_arg(args, "review_url"):
        return error("Give request_id or review_url of the pending review.")
    try:
        decision, edited, reason = validate(
            {
                "action": args.get("action"),
                "edited_text": args.get("edited_text"),
                "refusal_reason": args.get("refusal_reason"),
            }
        )
        found = await _found(env, args)
        if found is None:
            return error("No pending review of yours with that request_id or review_url.")
        decided = await record_decision(env.event_log, found, decision, edited, reason)
    except DecisionRefused as refused:
        return error(refused.detail)
    row = found.row
    return Outcome(
        {
            "status": "resolved",
            "request_id": found.request_id,
            "execution_history_id": row["root_run_id"],
            "workflow_name": row["workflow_name"],
            "agent_label": row["agent_label"],
            "decision": decided.decision,
        }
    )
