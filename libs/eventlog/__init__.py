"""The JetStream-backed event log: optimistic appends, replay, live tails, provisioning."""

from libs.eventlog.errors import (
    ConcurrencyConflict,
    EventLogError,
    PayloadTooLarge,
    ReplayGap,
    ReplicaLag,
    ServerTooOld,
    StreamMisconfigured,
)
from libs.eventlog.log import Appended, EventLog, new_message_id
from libs.eventlog.stream import check_server, provision_run_stream

__all__ = [
    "Appended",
    "ConcurrencyConflict",
    "EventLog",
    "EventLogError",
    "PayloadTooLarge",
    "ReplayGap",
    "ReplicaLag",
    "ServerTooOld",
    "StreamMisconfigured",
    "check_server",
    "new_message_id",
    "provision_run_stream",
]
