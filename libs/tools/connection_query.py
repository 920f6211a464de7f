"""A stored MCP connection for the tool sandbox, asked of a service that may decrypt it.

The sandbox runs user code, so it holds neither the database URL nor the secret key. When a
call names a stored connection (`{"stored": true, "id"}`), the sandbox asks
`heym.query.agent_runtime.mcp_connection` for it, for the call's owner; the answer (headers
and env included) travels over core NATS, in memory only, never in the event log.
"""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
import msgspec
import nats.errors
from nats.aio.client import Client as NATS

from contracts.tools import MCP_CONNECTION_SUBJECT, McpConnectionReply, McpConnectionRequest
from libs.secrets import DecryptError, SecretBox
from libs.tools.connection_store import load_server
from libs.tools.mcp_config import McpServer, normalise

log = logging.getLogger(__name__)

_decode_request = msgspec.json.Decoder(McpConnectionRequest).decode
_decode_reply = msgspec.json.Decoder(McpConnectionReply).decode


class ConnectionUnavailable(Exception):
    """No service answered for stored connections (the agent runtime is not running)."""


async def answer(pool: asyncpg.Pool[Any], box: SecretBox, data: bytes) -> bytes:
    """The responder's work: the owner's stored connection, or `connection: null`."""
    try:
        request = _decode_request(data)
    except msgspec.DecodeError:
        return msgspec.json.encode(McpConnectionReply())
    try:
        server = await load_server(pool, box, request.owner_id, request.connection_id)
    except DecryptError as exc:
        log.error("stored MCP connection %s cannot be decrypted: %s", request.connection_id, exc)
        server = None
    if server is None:
        return msgspec.json.encode(McpConnectionReply())
    form = {**server.dispatch_form(), "headers": server.headers, "env": server.env}
    form.pop("stored", None)
    return msgspec.json.encode(McpConnectionReply(connection=form))


async def request(
    nc: NATS, owner_id: str, connection_id: str, *, timeout_s: float = 10.0
) -> McpServer | None:
    """The sandbox's side: the stored connection with its secrets, or None if there is none."""
    body = msgspec.json.encode(McpConnectionRequest(owner_id=owner_id, connection_id=connection_id))
    try:
        msg = await nc.request(MCP_CONNECTION_SUBJECT, body, timeout=timeout_s)
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError) as exc:
        raise ConnectionUnavailable(
            f"stored MCP connections are unavailable ({type(exc).__name__}): "
            "the agent runtime answers for them"
        ) from None
    reply = _decode_reply(msg.data)
    if reply.connection is None:
        return None
    return msgspec.structs.replace(normalise(reply.connection), stored=True)
