"""`NodeRunner`: runs one dispatched node invocation and records its result exactly once."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

import httpx
import msgspec
import nats.errors
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.agents import NodeToolDispatched
from contracts.base import Envelope
from contracts.credentials import NODE_CREDENTIALS, NodeCredentialsReply, NodeCredentialsRequest
from contracts.nodes import NodeAttemptFailed, NodeCompleted, NodeDispatched
from libs import telemetry
from libs.eventlog import Appended, ConcurrencyConflict, EventLog, PayloadTooLarge
from libs.expressions import ExpressionError, build_context
from libs.secrets import Masker, mentions_credentials
from libs.service.work import through_outages
from services.tool_sandbox import tracing
from services.tool_sandbox.a2a_client import RemoteAgentError, RemoteCall
from services.tool_sandbox.a2a_client.node import call_node_agent
from services.tool_sandbox.http_node import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT_S,
    HttpNodeError,
    execute_http,
)

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


def as_dispatch(ev: NodeDispatched | NodeToolDispatched) -> NodeDispatched:
    """A canvas node run as an agent tool is executed like any dispatched node."""
    if isinstance(ev, NodeDispatched):
        return ev
    return NodeDispatched(
        invocation_id=ev.invocation_id,
        node_id=ev.node_id,
        node_label=ev.node_label,
        node_type=ev.node_type,
        service="tool_sandbox",
        node=ev.node,
        inputs=ev.inputs,
        upstream=ev.upstream,
        vars=ev.vars,
        idempotency_key=ev.idempotency_key,
        dispatched_at_ms=_now_ms(),
    )


class CredentialError(RuntimeError):
    """The node's `$credentials` could not be had (the node fails with this, never a secret)."""


class CredentialSource:
    """`$credentials` for the node being run, asked of the scheduler (the sandbox holds no
    database URL and no secret key) and never recorded: the node's output and error are
    masked with them."""

    def __init__(self, nc: NATS, timeout_s: float = 5.0) -> None:
        self._nc = nc
        self._timeout = timeout_s

    async def for_node(self, run_id: str, ev: NodeDispatched) -> NodeCredentialsReply:
        """`values` for `$credentials`, `node_credential` for an `a2a` node's credentialId."""
        if not ev.owner_id or not (mentions_credentials([ev.node]) or names_credential(ev.node)):
            return NodeCredentialsReply()
        request = NodeCredentialsRequest(run_id=run_id, invocation_id=ev.invocation_id)
        try:
            msg = await self._nc.request(
                NODE_CREDENTIALS, msgspec.json.encode(request), timeout=self._timeout
            )
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError) as exc:
            raise CredentialError(
                f"the scheduler did not answer for $credentials ({exc!r})"
            ) from None
        reply = msgspec.json.decode(msg.data, type=NodeCredentialsReply)
        if reply.error is not None:
            raise CredentialError(f"credentials: {reply.error}")
        return reply


def names_credential(node: dict[str, object]) -> bool:
    data = node.get("data")
    return (
        node.get("type") == "a2a"
        and isinstance(data, dict)
        and bool(str(data.get("credentialId") or "").strip())
    )


class NodeRunner:
    def __init__(
        self,
        event_log: EventLog,
        client: httpx.AsyncClient,
        *,
        credentials: CredentialSource | None = None,
        a2a: RemoteCall | None = None,
        http_timeout_s: float = DEFAULT_TIMEOUT_S,
        http_max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self._log = event_log
        self._client = client
        self._credentials = credentials
        self._a2a = a2a
        self._http_timeout_s = http_timeout_s
        self._http_max_response_bytes = http_max_response_bytes

    async def run(self, env: Envelope, ev: NodeDispatched, *, redelivered: bool) -> None:
        subject = subjects.node(env.run_id, ev.invocation_id)
        if redelivered and await self._log.last_sequence(subject) > 0:
            return  # recorded before the redelivery: never run a side effect twice
        # The dispatch carries the run's span; this node's span is derived from it (the
        # HTTP request and the recorded result carry it).
        span = telemetry.node_context(
            telemetry.TraceContext.parse(env.traceparent), env.run_id, ev.invocation_id
        )
        traceparent = telemetry.header_of(span) or env.traceparent
        started = _now_ms()
        result: NodeCompleted | NodeAttemptFailed
        try:
            secrets = (
                await self._credentials.for_node(env.run_id, ev)
                if self._credentials
                else NodeCredentialsReply()
            )
        except CredentialError as exc:
            failed = self._failed(ev, str(exc), started)
            if await self._record(env, subject, failed, ev, traceparent):
                tracing.node_ran(env, ev, failed, span)
            return
        mask = Masker([*secrets.values.values(), secrets.node_credential])
        try:
            output = mask.value(await self._execute(env, ev, secrets, traceparent))
        except RemoteAgentError as exc:
            result = self._failed(ev, mask.text(str(exc)), started, retryable=exc.retryable)
        except (HttpNodeError, ExpressionError, ValueError) as exc:
            result = self._failed(ev, mask.text(str(exc)), started)
        except Exception as exc:  # a bug here must fail the node, not the service
            log.exception("node %s (%s) crashed", ev.node_label, ev.node_type)
            result = self._failed(ev, mask.text(f"{type(exc).__name__}: {exc}"), started)
        else:
            result = NodeCompleted(
                invocation_id=ev.invocation_id,
                node_id=ev.node_id,
                node_label=ev.node_label,
                node_type=ev.node_type,
                status="success",
                output=output,
                attempt=ev.attempt,
                started_at_ms=started,
                finished_at_ms=_now_ms(),
            )
        try:
            recorded = await self._record(env, subject, result, ev, traceparent)
        except PayloadTooLarge as exc:
            # An output the log cannot hold fails the node clearly (never a lost result).
            result = self._failed(
                ev, f"the node's output is too large: {exc}", started, retryable=False
            )
            recorded = await self._record(env, subject, result, ev, traceparent)
        if recorded:
            tracing.node_ran(env, ev, result, span)

    async def _record(
        self,
        env: Envelope,
        subject: str,
        result: NodeCompleted | NodeAttemptFailed,
        ev: NodeDispatched,
        traceparent: str | None,
    ) -> bool:
        """Append the node's result (once per invocation); False if it was recorded before."""
        appended: Appended | None = None

        async def append() -> None:
            nonlocal appended
            appended = await self._log.append(
                subject,
                [result],
                expected_sequence=0,
                message_id=f"result-{env.run_id}-{ev.invocation_id}",
                causation_id=env.event_id,
                correlation_id=env.correlation_id or env.run_id,
                traceparent=traceparent,
            )

        try:
            # The node ran: an outage of NATS delays its record, it must not run it again
            # (a retry after a lost acknowledgement is a duplicate or a conflict, both fine).
            await through_outages(append, None, f"result of {ev.node_label}")
        except ConcurrencyConflict:
            log.info("result of %s/%s was already recorded", env.run_id, ev.invocation_id)
            return False
        return appended is not None and not appended.duplicate

    async def _execute(
        self,
        env: Envelope,
        ev: NodeDispatched,
        secrets: NodeCredentialsReply,
        traceparent: str | None,
    ) -> object:
        ctx = build_context(
            ev.inputs,
            ev.upstream,
            vars=ev.vars,
            global_vars=ev.globals,
            credentials=secrets.values,
            now=datetime.fromtimestamp(ev.dispatched_at_ms / 1000, UTC),
            timezone=ev.timezone or "UTC",
        )
        raw = ev.node.get("data")
        data: dict[str, object] = dict(raw) if isinstance(raw, dict) else {}
        if ev.node_type == "http":
            return await execute_http(
                data,
                ctx,
                client=self._client,
                idempotency_key=ev.idempotency_key,
                traceparent=traceparent,
                default_timeout_s=self._http_timeout_s,
                max_response_bytes=self._http_max_response_bytes,
            )
        if ev.node_type == "a2a" and self._a2a is not None:
            return await call_node_agent(self._a2a, data, ctx, secrets.node_credential)
        raise ValueError(f"the tool sandbox cannot run {ev.node_type!r} nodes")

    @staticmethod
    def _failed(
        ev: NodeDispatched, message: str, started: int, *, retryable: bool = True
    ) -> NodeAttemptFailed:
        return NodeAttemptFailed(
            retryable=retryable,
            invocation_id=ev.invocation_id,
            node_id=ev.node_id,
            node_label=ev.node_label,
            node_type=ev.node_type,
            attempt=ev.attempt,
            error=message,
            started_at_ms=started,
            finished_at_ms=_now_ms(),
        )
