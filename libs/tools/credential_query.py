"""The key of a stored credential a tool call names, for the tool sandbox.

The sandbox holds no database URL and no secret key. A work item that calls a remote A2A
agent names a credential by id (`meta.agent.credentialId`, or an `a2a` canvas node's
`meta.node.data.credentialId`). The sandbox asks `heym.query.agent_runtime.tool_credential`
naming only the run and the work item; the agent runtime reads that item from the log and
answers with the dispatching owner's credential of that id, and only while the call has no
result. The key travels over core NATS, in memory only, never in the event log.
"""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
import msgspec
import nats.errors
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.agents import ToolCallRecorded
from contracts.subjects import SubjectError
from contracts.tools import (
    TOOL_CREDENTIAL_SUBJECT,
    SandboxToolDispatched,
    ToolCredentialReply,
    ToolCredentialRequest,
)
from libs.eventlog import EventLog
from libs.secrets import DecryptError, SecretBox
from libs.secrets.credentials import load_credential

log = logging.getLogger(__name__)

_decode_request = msgspec.json.Decoder(ToolCredentialRequest).decode
_decode_reply = msgspec.json.Decoder(ToolCredentialReply).decode


class CredentialUnavailable(Exception):
    """The credential could not be had (the message names no secret)."""


def named_credential(ev: SandboxToolDispatched) -> str:
    """The credential id a work item names, or ""."""
    if ev.source == "a2a":
        agent = ev.meta.get("agent")
        raw = agent.get("credentialId") if isinstance(agent, dict) else None
    elif ev.source == "node_tool":
        node = ev.meta.get("node")
        data = node.get("data") if isinstance(node, dict) else None
        is_a2a = isinstance(node, dict) and node.get("type") == "a2a"
        raw = data.get("credentialId") if is_a2a and isinstance(data, dict) else None
    else:
        raw = None
    return raw.strip() if isinstance(raw, str) else ""


async def _resolve(
    event_log: EventLog, pool: asyncpg.Pool[Any], box: SecretBox, request: ToolCredentialRequest
) -> ToolCredentialReply:
    items = await event_log.read(
        subjects.work_item(request.run_id, "tool_sandbox", request.item_id)
    )
    item = next((e.event for e in items if isinstance(e.event, SandboxToolDispatched)), None)
    if item is None or not item.owner_id:
        return ToolCredentialReply(error="no such work item")
    credential_id = named_credential(item)
    if not credential_id:
        return ToolCredentialReply(error="the work item names no credential")
    done = await event_log.read(subjects.agent(request.run_id, item.invocation_id))
    if any(
        isinstance(e.event, ToolCallRecorded) and e.event.tool_call_id == item.tool_call_id
        for e in done
    ):
        return ToolCredentialReply(error="the call already has its result")
    try:
        cred = await load_credential(pool, box, credential_id, item.owner_id)
    except DecryptError:
        cred = None
    if cred is None:
        return ToolCredentialReply(
            error=f"credential {credential_id!r} is not one of the agent owner's credentials"
        )
    return ToolCredentialReply(value=cred.api_key)


async def answer(
    event_log: EventLog, pool: asyncpg.Pool[Any], box: SecretBox, data: bytes
) -> bytes:
    """The responder's work (agent runtime)."""
    try:
        reply = await _resolve(event_log, pool, box, _decode_request(data))
    except (msgspec.DecodeError, SubjectError) as exc:
        reply = ToolCredentialReply(error=f"bad request: {exc}")
    return msgspec.json.encode(reply)


async def request(nc: NATS, run_id: str, item_id: str, *, timeout_s: float = 10.0) -> str:
    """The sandbox's side: the key, or `CredentialUnavailable`."""
    body = msgspec.json.encode(ToolCredentialRequest(run_id=run_id, item_id=item_id))
    try:
        msg = await nc.request(TOOL_CREDENTIAL_SUBJECT, body, timeout=timeout_s)
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError) as exc:
        raise CredentialUnavailable(
            f"stored credentials are unavailable ({type(exc).__name__}): "
            "the agent runtime answers for them"
        ) from None
    reply = _decode_reply(msg.data)
    if reply.error is not None:
        raise CredentialUnavailable(f"credential: {reply.error}")
    return reply.value
