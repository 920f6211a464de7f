"""The event log's specific errors; only the edges map them to HTTP or JSON-RPC statuses."""

from __future__ import annotations


class EventLogError(RuntimeError):
    """The event log could not do what was asked (server unreachable, stream missing, ...)."""


class ConcurrencyConflict(EventLogError):
    """Someone appended to the aggregate after the sequence the writer expected.

    The writer should re-read the aggregate, decide again and retry (or stop if the work it
    wanted to record is already there).
    """

    def __init__(self, subject: str, expected: int, actual: int | None) -> None:
        self.subject = subject
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"concurrent append to {subject}: expected last sequence {expected}, "
            f"found {actual if actual is not None else 'a later one'}"
        )


class PayloadTooLarge(EventLogError):
    """An event batch is bigger than the stream's maximum message size."""

    def __init__(self, subject: str, size: int, limit: int) -> None:
        self.subject = subject
        self.size = size
        self.limit = limit
        super().__init__(
            f"event batch for {subject} is {size} bytes, over the {limit}-byte message limit; "
            "large payloads must be truncated or stored by reference"
        )


class ServerTooOld(EventLogError):
    """The NATS server lacks features the log relies on (and would silently ignore them)."""


class StreamMisconfigured(EventLogError):
    """The stream exists but the server did not keep a setting the log relies on."""


class ReplayGap(EventLogError):
    """A replay saw a gap in consumer sequences (messages dropped on the way); retry the read."""


class ReplicaLag(EventLogError):
    """A read did not reach a sequence known to be in the stream: the replica serving it lags
    (on a NATS cluster). Asking again later (a redelivery) reads a caught-up view."""
