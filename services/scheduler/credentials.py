"""The scheduler's credential broker: `$credentials` for a node the tool sandbox runs.

Answers `heym.query.scheduler.node_credentials` only for an invocation of the named run that
the scheduler dispatched to the tool sandbox, that has no result yet and whose node mentions
`$credentials`, with the credentials of the run's owner; an `a2a` node's `credentialId` is
answered as `node_credential` (the run owner's credential of that id only). Anyone else gets
an error.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import msgspec
from nats.aio.msg import Msg

from contracts.credentials import NodeCredentialsReply, NodeCredentialsRequest
from contracts.nodes import NodeAttemptFailed, NodeCompleted, NodeDispatched
from contracts.runs import RunRequested
from contracts.subjects import SubjectError
from libs.eventlog import EventLog
from libs.secrets import DecryptError, SecretBox, credential_values, mentions_credentials
from libs.secrets.credentials import load_credential

_decode = msgspec.json.Decoder(NodeCredentialsRequest).decode
_encode = msgspec.json.Encoder().encode


class CredentialBroker:
    def __init__(self, event_log: EventLog, pool: asyncpg.Pool[Any], box: SecretBox | None) -> None:
        self._log = event_log
        self._pool = pool
        self._box = box

    async def handle(self, msg: Msg) -> None:
        try:
            reply = await self.answer(_decode(msg.data))
        except (msgspec.DecodeError, SubjectError) as exc:
            reply = NodeCredentialsReply(error=f"bad request: {exc}")
        await msg.respond(_encode(reply))

    async def answer(self, request: NodeCredentialsRequest) -> NodeCredentialsReply:
        if self._box is None:
            return NodeCredentialsReply(error="the scheduler holds no HEYM_SECRET_KEY")
        owner = ""
        node: dict[str, Any] | None = None
        for env in await self._log.replay(request.run_id):
            ev = env.event
            if isinstance(ev, RunRequested):
                owner = ev.owner_id
            elif (
                isinstance(ev, NodeDispatched)
                and ev.invocation_id == request.invocation_id
                and ev.service == "tool_sandbox"
            ):
                node = ev.node
            elif (
                isinstance(ev, NodeCompleted | NodeAttemptFailed)
                and ev.invocation_id == request.invocation_id
            ):
                node = None  # finished: its credentials are no longer needed
        if node is None or not owner:
            return NodeCredentialsReply(error="no such running invocation in the tool sandbox")
        values: dict[str, str] = {}
        if mentions_credentials([node]):
            values = await credential_values(self._pool, self._box, owner)
        named = _named_credential(node)
        if not named:
            return NodeCredentialsReply(values=values)
        try:
            cred = await load_credential(self._pool, self._box, named, owner)
        except DecryptError:
            cred = None
        if cred is None:
            return NodeCredentialsReply(
                error=f"credential {named!r} is not one of the workflow owner's credentials"
            )
        return NodeCredentialsReply(values=values, node_credential=cred.api_key)


def _named_credential(node: dict[str, Any]) -> str:
    """The credential an `a2a` node names by id (its key goes to the remote agent)."""
    data = node.get("data")
    if node.get("type") != "a2a" or not isinstance(data, dict):
        return ""
    cred = data.get("credentialId")
    return cred.strip() if isinstance(cred, str) else ""
