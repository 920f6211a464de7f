"""Recording that work will never be done, so whoever waits for it sees an error instead of
waiting for ever: a dispatched node whose message exhausted its deliveries."""

from __future__ import annotations

import contextlib
import time

from contracts import subjects
from contracts.base import Envelope
from contracts.nodes import NodeAttemptFailed, NodeDispatched
from libs.eventlog import ConcurrencyConflict, EventLog


async def fail_dispatches(event_log: EventLog, envelopes: list[Envelope] | None, why: str) -> None:
    """Record a non-retryable failure for every node dispatch in a message given up on."""
    now = int(time.time() * 1000)
    for env in envelopes or []:
        ev = env.event
        if not isinstance(ev, NodeDispatched):
            continue
        failure = NodeAttemptFailed(
            invocation_id=ev.invocation_id,
            node_id=ev.node_id,
            node_label=ev.node_label,
            node_type=ev.node_type,
            attempt=ev.attempt,
            error=f"the {ev.service} service could not run node {ev.node_label!r}: {why}",
            retryable=False,
            started_at_ms=now,
            finished_at_ms=now,
        )
        with contextlib.suppress(ConcurrencyConflict):  # a result was recorded after all
            await event_log.append(
                subjects.node(env.run_id, ev.invocation_id),
                [failure],
                expected_sequence=0,
                message_id=f"result-{env.run_id}-{ev.invocation_id}",
            )
