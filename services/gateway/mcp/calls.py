"""`tools/call`: a workflow tool runs its workflow like `POST /execute` (trigger source `MCP`,
history written by the scheduler) and answers with its outputs as JSON text; `heym_chat`
runs one Heym Agent turn and answers with its reply (Heym §12.10)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
import msgspec
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from contracts.chat import BuildRequest
from contracts.runs import WorkflowSnapshot
from libs.chat import strip_markers
from libs.db.globals import global_values
from libs.results import strip_private
from libs.service import ServiceContext
from libs.workflow import store
from services.gateway import chat_log
from services.gateway.chat_log import ChatError, Message
from services.gateway.chat_stream import PING, follow_turn
from services.gateway.mcp.catalog import ChatSurface, WorkflowTool
from services.gateway.mcp.principals import Principal
from services.gateway.runs import new_run_request, started_run, wait_for_outcome

TRIGGER_SOURCE = "MCP"
NO_TEXT = "(The assistant returned no text.)"
NO_MODEL = (
    "No model is configured for the Heym Agent on this MCP server: pick a credential and a "
    "model for the chat tool in the MCP tab."
)

Progress = Callable[[float, str], Awaitable[None]]


def text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


async def call_workflow(
    ctx: ServiceContext, principal: Principal, tool: WorkflowTool, arguments: dict[str, Any]
) -> types.CallToolResult:
    row = await store.get_workflow(ctx.pool, tool.workflow_id)
    if row is None or row.owner_id != principal.user_id:
        raise MCPError(code=INVALID_PARAMS, message=f"Tool not found: {tool.name}")
    if not row.nodes:
        raise MCPError(code=INVALID_PARAMS, message="the workflow has no nodes")
    cache = await store.workflow_cache(ctx.pool, principal.user_id, row)
    request = new_run_request(
        workflow=WorkflowSnapshot(id=row.id, name=row.name, nodes=row.nodes, edges=row.edges),
        owner_id=principal.user_id,
        inputs={"headers": {}, "query": {}, "body": arguments},
        test_run=False,
        trigger_source=TRIGGER_SOURCE,
        cache=cache,
        traceparent=None,
    )
    # `$global` as it is now, snapshotted into the request (as POST /execute does).
    request = msgspec.structs.replace(request, globals=await global_values(ctx.pool, row.owner_id))
    async with started_run(ctx.event_log, request, watch=True) as (run_id, queue):
        outcome = await wait_for_outcome(
            ctx.event_log,
            run_id,
            queue,
            timeout=ctx.settings.execute_timeout_s,
            early_return=True,
            with_results=False,
        )
    if outcome.early is not None:
        return text_result(json.dumps(strip_private(outcome.early.outputs), default=str))
    done = outcome.completed
    if done is None:
        still = {"status": "running", "execution_id": run_id}
        return text_result(json.dumps(still))
    if done.status == "cancelled":
        return text_result(json.dumps({"status": "cancelled", "execution_id": run_id}), error=True)
    outputs = strip_private(done.outputs)
    if done.status == "error":
        body = {"error": done.error, "outputs": outputs} if outputs else {"error": done.error}
        return text_result(json.dumps(body, default=str), error=True)
    return text_result(json.dumps(outputs, default=str))


async def call_chat(
    ctx: ServiceContext,
    principal: Principal,
    surface: ChatSurface,
    arguments: dict[str, Any],
    progress: Progress,
) -> types.CallToolResult:
    """One Heym Agent turn (credential mode off, build mode on); errors are isError results."""
    try:
        return await _chat(ctx, principal, surface, arguments, progress)
    except ChatError as exc:
        return text_result(f"Heym chat failed: {exc}", error=True)


async def _chat(
    ctx: ServiceContext,
    principal: Principal,
    surface: ChatSurface,
    arguments: dict[str, Any],
    progress: Progress,
) -> types.CallToolResult:
    raw = arguments.get("message")
    message = raw.strip() if isinstance(raw, str) else raw
    content = chat_log.checked_content(message)
    if not surface.credential_id or not surface.model:
        return text_result(NO_MODEL, error=True)
    await chat_log.checked_credential(ctx.pool, principal.user_id, surface.credential_id)
    given = arguments.get("conversation_id")
    if given is not None and not isinstance(given, str):
        raise ChatError("conversation_id must be a UUID string")
    if isinstance(given, str) and given.strip():
        if chat_log.conversation_id(given.strip()) is None:
            raise ChatError("conversation_id must be a UUID string")
        conv = await chat_log.owned(ctx.event_log, given.strip(), principal.user_id)
        if principal.server_key and (
            conv.created is None or conv.created.server_id != principal.server_id
        ):
            raise ChatError(f"conversation {given.strip()} not found", 404)
    else:
        conv = await chat_log.start_conversation(
            ctx.event_log, principal.user_id, source="mcp", server_id=principal.server_id
        )
    turn = Message(
        content=content,
        credential_id=surface.credential_id,
        model=surface.model,
        credential_mode="off",
        build=BuildRequest(),
    )
    conv, posted = await chat_log.post_message(ctx.event_log, conv, turn, queue_when_busy=False)
    reply, actions, done, step = "", [], {}, 0
    async for frame in follow_turn(ctx.event_log, conv.conversation_id, turn_id=posted.message_id):
        if frame is PING:
            await progress(step, "Still working...")
        elif frame["type"] == "tool_start":
            step += 1
            if frame["name"] not in actions:
                actions.append(frame["name"])
            await progress(step, str(frame["label"]))
        elif frame["type"] == "content":
            reply = str(frame["text"])
        elif frame["type"] == "assistant_done":
            done = frame
    if done.get("error"):
        return text_result(f"Heym chat failed: {done['error']}", error=True)
    if done.get("cancelled"):
        return text_result("Heym chat failed: the turn was cancelled.", error=True)
    lines = [strip_markers(reply) or NO_TEXT, "", f"conversation_id: {conv.conversation_id}"]
    if actions:
        lines.append(f"heym actions: {', '.join(actions)}")
    if done.get("paused_for_clarification"):
        lines.append(
            "The assistant is waiting for your answers: reply with heym_chat on the same "
            "conversation_id."
        )
    if done.get("verified"):
        lines.append("Verified: the latest test run of the saved workflow passed.")
    return text_result("\n".join(lines))
