"""Asking for a node's `$credentials` at run time (core request/reply, never recorded).

The tool sandbox holds no database URL and no secret key. When a node it runs mentions
`$credentials`, it asks the scheduler (`heym.query.scheduler.node_credentials`) for them,
naming the run and the invocation; the scheduler answers only for an invocation it dispatched
to the tool sandbox that has no result yet, and only with the credentials of that run's owner.
The values travel over NATS (use TLS between services in production) and are never written to
the event log or a read model: the node's output and error are masked with them.

An `a2a` node names one stored credential by id (`data.credentialId`, its key sent to the
remote agent); the broker answers it as `node_credential`, under the same conditions.
"""

from __future__ import annotations

from typing import Final

import msgspec

from contracts.subjects import query

NODE_CREDENTIALS: Final = query("scheduler", "node_credentials")


class NodeCredentialsRequest(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    invocation_id: str


class NodeCredentialsReply(msgspec.Struct, frozen=True, kw_only=True):
    values: dict[str, str] = msgspec.field(default_factory=dict)
    error: str | None = None
    # the key of the credential the node names by `data.credentialId` (`a2a` nodes)
    node_credential: str = ""
