"""The assistant's tools that answer at once, registered by name (one module per tool group).

Run tools (`execute_workflow`, `run_workflow_test`) and the wait tool are steps of their own
(`effects.py`): they start runs and follow them through recorded events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from libs.chat import ToolCall
from services.agent_runtime.assistant.tools import (
    account,
    build_mode,
    builder,
    docs,
    history,
    review,
    workflows,
)
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, error

Simple = Callable[[ToolEnv, dict[str, Any]], Awaitable[Outcome]]
WithCall = Callable[[ToolEnv, ToolCall, dict[str, Any]], Awaitable[Outcome]]

READ: dict[str, Simple] = {
    "list_workflows": workflows.list_workflows,
    "get_workflow_definition": workflows.get_workflow_definition,
    "get_recent_executions": history.get_recent_executions,
    "get_active_executions": history.get_active_executions,
    "get_workflow_run_history": history.get_workflow_run_history,
    "get_analytics_stats": history.get_analytics_stats,
    "search_documentation": docs.search_documentation,
    "get_schedule_events": account.get_schedule_events,
    "get_global_variables": account.get_global_variables,
}
# writing tools that answer at once (their start is recorded first)
WRITE: dict[str, Simple] = {"resolve_hitl_review": review.resolve_hitl_review}
BUILDER: dict[str, WithCall] = {
    "create_workflow": builder.create_workflow,
    "edit_workflow": builder.edit_workflow,
}
BUILD: dict[str, WithCall] = {
    "save_workflow": build_mode.save_workflow,
    "finish": build_mode.finish,
}


async def run_sync(env: ToolEnv, call: ToolCall) -> Outcome:
    """Run a tool that answers at once; unknown names (and tools this turn does not offer)
    get Heym's `{error: "Unknown tool: <name>"}`."""
    args = call.args
    building = env.turn.message.build is not None
    if call.name in READ:
        return await READ[call.name](env, args)
    if call.name in WRITE:
        return await WRITE[call.name](env, args)
    if call.name in BUILDER and not building:
        return await BUILDER[call.name](env, call, args)
    if call.name in BUILD and building:
        return await BUILD[call.name](env, call, args)
    return error(f"Unknown tool: {call.name}")


__all__ = ["Outcome", "ToolEnv", "run_sync"]
