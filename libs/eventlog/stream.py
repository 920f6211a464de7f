"""Provisioning of the run stream: version check, create-or-update, and a read-back check.

Older servers accept unknown stream settings and silently drop them (2.9 drops
`allow_msg_schedules`, 2.10 lacks `Nats-Expected-Last-Subject-Sequence-Subject`), which would
turn durable timers and per-run concurrency into silent no-ops, so both are checked here.
"""

from __future__ import annotations

import asyncio
import logging

import nats.js.errors
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig, StreamInfo

from contracts.subjects import RUN_STREAM, RUN_STREAM_SUBJECTS
from libs.eventlog.errors import ServerTooOld, StreamMisconfigured

log = logging.getLogger(__name__)

NO_PEERS = 10005  # "no suitable peers for placement"

MIN_SERVER = (2, 12, 0)


def server_version(nc: NATS) -> tuple[int, int, int]:
    v = nc.connected_server_version
    return (v.major, v.minor, v.patch)


def check_server(nc: NATS) -> None:
    """Refuse to start against a server older than 2.12 (message schedules, per-run checks)."""
    check_version(server_version(nc))


def check_version(found: tuple[int, int, int]) -> None:
    if found < MIN_SERVER:
        want = ".".join(map(str, MIN_SERVER))
        have = ".".join(map(str, found))
        raise ServerTooOld(
            f"NATS server {have} is older than {want}: it would silently ignore durable "
            "timers (message schedules) and per-run concurrency checks. Upgrade nats-server."
        )


# Every read of the log is a short-lived consumer (`reader.py`), so a busy deployment has
# hundreds at once; nats-server 2.15 caps a stream at 1,000 unless the stream says otherwise
# (and treats -1 as "the default"): the scale-out benchmark reached it at 200 runs/s.
MAX_CONSUMERS = 100_000


def run_stream_config(
    *, max_message_bytes: int, duplicate_window_s: float, replicas: int
) -> StreamConfig:
    return StreamConfig(
        name=RUN_STREAM,
        description="Heym run events: the source of truth for every run",
        subjects=list(RUN_STREAM_SUBJECTS),
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.OLD,
        max_msg_size=max_message_bytes,
        duplicate_window=duplicate_window_s,
        num_replicas=replicas,
        allow_direct=True,
        allow_msg_schedules=True,
        max_consumers=MAX_CONSUMERS,
    )


async def provision_run_stream(
    nc: NATS,
    *,
    max_message_bytes: int = 8 * 1024 * 1024,
    duplicate_window_s: float = 600.0,
    replicas: int = 1,
) -> None:
    """Create the run stream, or bring an existing one up to date; idempotent."""
    check_server(nc)
    js = nc.jetstream()
    cfg = run_stream_config(
        max_message_bytes=max_message_bytes,
        duplicate_window_s=duplicate_window_s,
        replicas=replicas,
    )
    try:
        info = await js.stream_info(RUN_STREAM)
    except nats.js.errors.NotFoundError:
        info = await _create(js, cfg)
        log.info("created stream %s", RUN_STREAM)
    else:
        if (
            info.config.max_msg_size != cfg.max_msg_size
            or info.config.duplicate_window != cfg.duplicate_window
            or not info.config.allow_msg_schedules
            or info.config.max_consumers != cfg.max_consumers
            or sorted(info.config.subjects or []) != sorted(cfg.subjects or [])
        ):
            info = await js.update_stream(cfg)
            log.info("updated stream %s", RUN_STREAM)
    if not info.config.allow_msg_schedules:
        raise StreamMisconfigured(
            f"stream {RUN_STREAM} did not keep allow_msg_schedules; durable timers would not fire"
        )
    if info.config.storage != StorageType.FILE:
        raise StreamMisconfigured(f"stream {RUN_STREAM} must use file storage")


async def _create(js: JetStreamContext, cfg: StreamConfig, patience_s: float = 30.0) -> StreamInfo:
    """Create the stream; a cluster still gathering its nodes ("no suitable peers for
    placement", just after it elected a meta leader) is asked again until `patience_s`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience_s
    while True:
        try:
            return await js.add_stream(cfg)
        except nats.js.errors.BadRequestError as exc:
            if exc.err_code != NO_PEERS or loop.time() > deadline:
                raise
        log.info("stream %s: the cluster has not enough peers yet; asking again", cfg.name)
        await asyncio.sleep(0.5)
