"""Errors that say the infrastructure is away for a moment (a NATS cluster electing a leader,
Postgres restarting), not that a message is bad: work retried through them must not use up
the deliveries that exist to stop a poison message."""

from __future__ import annotations

import asyncpg
import nats.errors
import nats.js.errors

from libs.eventlog import (
    ConcurrencyConflict,
    EventLogError,
    PayloadTooLarge,
    ServerTooOld,
    StreamMisconfigured,
)

# How long a handler is retried in place through an outage before its delivery counts.
OUTAGE_BUDGET_S = 120.0
_NOT_AN_OUTAGE = (ConcurrencyConflict, PayloadTooLarge, ServerTooOld, StreamMisconfigured)
_NATS_AWAY = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.UnexpectedEOF,
    nats.errors.FlushTimeoutError,
    nats.errors.NoServersError,
    nats.errors.OutboundBufferLimitError,
    nats.js.errors.NoStreamResponseError,  # a stream without a leader for the moment
    nats.js.errors.ServiceUnavailableError,
)
_PG_AWAY = (
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.InterfaceError,
)


def is_outage(exc: BaseException) -> bool:
    if isinstance(exc, _NOT_AN_OUTAGE):
        return False
    if isinstance(exc, nats.js.errors.APIError):
        return exc.code in (None, 503)  # a cluster without a leader for the moment
    # ConnectionError: Postgres refusing connections while it restarts.
    return isinstance(exc, (EventLogError, *_NATS_AWAY, *_PG_AWAY, ConnectionError))
