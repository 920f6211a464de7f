"""The `a2a` node and the `a2a` tool source: what to send, read from a node or tool call."""

from __future__ import annotations

from typing import Any

from libs.a2a.remote import config_problems, from_meta, remote_agent
from libs.expressions import ExpressionContext, evaluate_off_loop, render_template
from services.tool_sandbox.a2a_client.call import Ask, BadRemoteCall, RemoteCall

DEFAULT_MESSAGE = "$input.text"


def _render(template: Any, ctx: ExpressionContext) -> str:
    if template is None or template == "":
        return ""
    return render_template(str(template), ctx, null_as_empty_single_token=True)


def _ask(data: dict[str, Any], ctx: ExpressionContext) -> Ask:
    return Ask(
        text=_render(data.get("message") or DEFAULT_MESSAGE, ctx),
        task_id=_render(data.get("taskId"), ctx).strip(),
        context_id=_render(data.get("contextId"), ctx).strip(),
    )


async def call_node_agent(
    call: RemoteCall, data: dict[str, Any], ctx: ExpressionContext, secret: str
) -> dict[str, Any]:
    """Run an `a2a` node: its templates rendered (off the event loop), then the call."""
    problems = config_problems(data)
    if problems:
        raise BadRemoteCall("; ".join(message for _, message in problems))
    ask = await evaluate_off_loop(_ask, data, ctx)
    return await call(remote_agent(data), ask, secret or None)


def tool_ask(arguments: dict[str, Any]) -> Ask:
    """A model's call of an `a2a_<name>` tool: `{message, task_id?, context_id?}`."""
    message = arguments.get("message")
    if not isinstance(message, str):
        raise BadRemoteCall("the tool needs a string 'message'")
    return Ask(
        text=message,
        task_id=str(arguments.get("task_id") or "").strip(),
        context_id=str(arguments.get("context_id") or "").strip(),
    )


async def call_tool_agent(
    call: RemoteCall, meta: dict[str, Any], arguments: dict[str, Any], secret: str
) -> dict[str, Any]:
    agent = meta.get("agent")
    if not isinstance(agent, dict):
        raise BadRemoteCall("the tool names no remote agent")
    return await call(from_meta(agent), tool_ask(arguments), secret or None)
