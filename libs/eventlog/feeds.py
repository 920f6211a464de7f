"""Partitioned feeds: a derived stream per folding consumer, so each run has one replica at a time.

A feed is a JetStream stream that *sources* the run stream through a subject transform adding a
partition token: `heym.run.<run>.…` is stored in the feed as `p.<k>.heym.run.<run>.…`, with
`k = {{partition(N,1)}}`, a hash of the run token computed by the server. The run stream stays
the only source of truth; every writer and reader of it is unchanged. The feed holds only what
its consumers have not acknowledged, give or take a few seconds: the replica holding a partition
purges it up to the consumer's ack floor periodically (`purge_acknowledged`), one bulk delete
instead of one per message (work-queue retention deletes on every ack, which with fsync on
every write doubled the hop's latency, measured). `max_age` (7 days) bounds what a consumer
that nobody pulls any more can leave behind.

Each partition has one durable pull consumer whose priority group uses the `pinned_client`
policy: NATS delivers a partition to one puller at a time, and moves the pin when that puller
stops pulling (or on `CONSUMER.UNPIN`).

A feed message keeps the source's headers (message id, correlation, traceparent) and carries
`Nats-Stream-Source: <stream> <sequence> …`, so the event's own stream sequence and subject are
recovered exactly (`source_sequence`, `source_subject`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS

from contracts.subjects import RUN_STREAM
from libs.eventlog.errors import EventLogError

log = logging.getLogger(__name__)

PRIORITY_GROUP = "heym"
H_SOURCE = "Nats-Stream-Source"
H_PIN = "Nats-Pin-Id"
_NS = 1_000_000_000
MAX_AGE_S = 7 * 24 * 3600


class FeedSpec:
    """Where a partitioned consumer reads from: names, the transform, the per-partition filters.

    `subject` is a run-stream filter whose first `*` is the key (the run or conversation id):
    `heym.run.*.>`, `heym.agent.*.>`, `heym.chat.*.cmd`.
    """

    def __init__(self, durable: str, subject: str, partitions: int) -> None:
        if "*" not in subject.split("."):
            raise ValueError(f"a partitioned feed needs a '*' key token in {subject!r}")
        if not 1 <= partitions <= 1024:
            raise ValueError("partitions must be between 1 and 1024")
        self.durable = durable
        self.subject = subject
        self.partitions = partitions
        self.stream = "HEYM_FEED_" + durable.upper().replace("-", "_")
        key = subject.split(".").index("*")
        self.key_index = key
        tokens = subject.split(".")
        tokens[key] = "{{wildcard(1)}}"
        self.transform_dest = f"p.{{{{partition({partitions},1)}}}}." + ".".join(tokens)

    def consumer(self, partition: int) -> str:
        return f"{self.durable}-p{partition}"

    def filter(self, partition: int) -> str:
        return f"p.{partition}.>"

    def key_of(self, feed_subject: str) -> str:
        """The run (or conversation) id of a feed message."""
        return source_subject(feed_subject).split(".")[self.key_index]


def partition_of_key(key: str, partitions: int) -> int:
    """The partition NATS's `{{partition(N,1)}}` puts `key` in (FNV-1a 32 of the token)."""
    h = 0x811C9DC5
    for byte in key.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h % partitions


def source_subject(feed_subject: str) -> str:
    """`p.<k>.heym.run.<run>.cmd` -> `heym.run.<run>.cmd`."""
    parts = feed_subject.split(".", 2)
    if len(parts) < 3 or parts[0] != "p":
        raise EventLogError(f"not a feed subject: {feed_subject!r}")
    return parts[2]


def partition_of(feed_subject: str) -> int:
    return int(feed_subject.split(".", 2)[1])


def source_sequence(headers: dict[str, str]) -> int:
    """The run-stream sequence of a sourced message (`Nats-Stream-Source: <stream> <seq> …`)."""
    raw = headers.get(H_SOURCE, "")
    parts = raw.split(" ")
    if len(parts) < 2 or not parts[1].isdigit():
        raise EventLogError(f"feed message without a source sequence: {raw!r}")
    return int(parts[1])


async def _api(nc: NATS, subject: str, body: dict[str, Any], patience_s: float = 60.0) -> Any:
    """One JetStream API request; a timeout or a cluster that is electing a leader (503) is
    asked again until `patience_s` (a cluster under load answers slowly, a new one has no
    leader yet)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience_s
    data = json.dumps(body).encode()
    while True:
        try:
            reply = await nc.request(subject, data, timeout=5.0)
            answer = json.loads(reply.data)
            error = answer.get("error") if isinstance(answer, dict) else None
            # 503: no leader just now; 10005: a new cluster still gathering its nodes
            if not (error and (error.get("code") == 503 or error.get("err_code") == 10005)):
                return answer
            why = str(error)
        except nats.errors.NoRespondersError:
            why = "no responders"
        except nats.errors.TimeoutError:
            why = "timeout"
        if loop.time() > deadline:
            raise EventLogError(f"JetStream did not answer {subject}: {why}")
        log.info("JetStream API %s: %s; asking again", subject, why)
        await asyncio.sleep(0.5)


def feed_config(spec: FeedSpec, *, replicas: int, start_seq: int) -> dict[str, Any]:
    source: dict[str, Any] = {
        "name": RUN_STREAM,
        "subject_transforms": [{"src": spec.subject, "dest": spec.transform_dest}],
    }
    if start_seq > 1:
        source["opt_start_seq"] = start_seq
    return {
        "name": spec.stream,
        "description": f"partitioned feed of {spec.subject} for {spec.durable} (derived)",
        "retention": "limits",
        "max_age": MAX_AGE_S * _NS,
        "storage": "file",
        "discard": "old",
        "num_replicas": replicas,
        "sources": [source],
    }


def consumer_config(
    spec: FeedSpec,
    partition: int,
    *,
    ack_wait_s: float,
    max_deliver: int,
    max_ack_pending: int,
    pin_ttl_s: float,
) -> dict[str, Any]:
    name = spec.consumer(partition)
    return {
        "durable_name": name,
        "name": name,
        "filter_subject": spec.filter(partition),
        "ack_policy": "explicit",
        "deliver_policy": "all",
        "ack_wait": int(ack_wait_s * _NS),
        "max_deliver": max_deliver,
        "max_ack_pending": max_ack_pending,
        "max_waiting": 4096,
        "priority_groups": [PRIORITY_GROUP],
        "priority_policy": "pinned_client",
        "priority_timeout": int(pin_ttl_s * _NS),
    }


async def _legacy_start(nc: NATS, durable: str) -> int:
    """Where a feed replacing an older push consumer `durable` on the run stream starts
    (its ack floor + 1), so an upgrade neither drops nor repeats the whole log; 1 otherwise."""
    info = await _api(nc, f"$JS.API.CONSUMER.INFO.{RUN_STREAM}.{durable}", {})
    if "error" in info:
        return 1
    return int(info["ack_floor"]["stream_seq"]) + 1


async def provision_feed(
    nc: NATS,
    spec: FeedSpec,
    *,
    replicas: int = 1,
    ack_wait_s: float,
    max_deliver: int,
    max_ack_pending: int,
    pin_ttl_s: float,
) -> None:
    """Create (or bring up to date) the feed stream and its partition consumers; idempotent."""
    info = await _api(nc, f"$JS.API.STREAM.INFO.{spec.stream}", {})
    if "error" in info:
        start = await _legacy_start(nc, spec.durable)
        cfg = feed_config(spec, replicas=replicas, start_seq=start)
        made = await _api(nc, f"$JS.API.STREAM.CREATE.{spec.stream}", cfg)
        if "error" in made and made["error"].get("err_code") != 10058:  # 10058: already exists
            raise EventLogError(f"cannot create feed {spec.stream}: {made['error']}")
        log.info("created feed %s (from run-stream sequence %d)", spec.stream, start)
        if start > 1:
            # The feed owns that position now; the old consumer would hold messages for ever.
            await _api(nc, f"$JS.API.CONSUMER.DELETE.{RUN_STREAM}.{spec.durable}", {})
    else:
        transforms = [
            t
            for s in info["config"].get("sources") or []
            for t in s.get("subject_transforms") or []
        ]
        if transforms != [{"src": spec.subject, "dest": spec.transform_dest}]:
            raise EventLogError(
                f"feed {spec.stream} is partitioned differently ({transforms}); drain it and "
                "delete it before changing HEYM_PARTITIONS"
            )
    for p in range(spec.partitions):
        name = spec.consumer(p)
        body = {
            "stream_name": spec.stream,
            "config": consumer_config(
                spec,
                p,
                ack_wait_s=ack_wait_s,
                max_deliver=max_deliver,
                max_ack_pending=max_ack_pending,
                pin_ttl_s=pin_ttl_s,
            ),
        }
        made = await _api(nc, f"$JS.API.CONSUMER.CREATE.{spec.stream}.{name}", body)
        if "error" in made:
            raise EventLogError(f"cannot create consumer {name}: {made['error']}")


async def purge_acknowledged(nc: NATS, spec: FeedSpec, partition: int) -> int:
    """Drop a partition's messages at or below its consumer's ack floor; returns how many."""
    info = await _api(nc, f"$JS.API.CONSUMER.INFO.{spec.stream}.{spec.consumer(partition)}", {})
    if "error" in info:
        return 0
    floor = int(info["ack_floor"]["stream_seq"])
    if floor <= 0:
        return 0
    done = await _api(
        nc,
        f"$JS.API.STREAM.PURGE.{spec.stream}",
        {"filter": spec.filter(partition), "seq": floor + 1},
    )
    return int(done.get("purged", 0))


async def unpin(nc: NATS, spec: FeedSpec, partition: int) -> None:
    """Release a partition's pin at once (the next waiting puller gets it)."""
    await _api(
        nc,
        f"$JS.API.CONSUMER.UNPIN.{spec.stream}.{spec.consumer(partition)}",
        {"group": PRIORITY_GROUP},
    )


async def source_stalled(nc: NATS, spec: FeedSpec, *, inactive_s: float) -> bool:
    """Whether the feed has stopped sourcing: its source consumer is gone (`active` -1) or
    silent past `inactive_s` (it beats every second), while the run stream holds an event for
    the feed past the last one sourced. nats-server notices a stalled source by itself only on
    a 10 s health check, and a feed whose new leader never set its source up stayed stalled
    for more than 30 s after the run stream's leader was killed."""
    info = await _api(nc, f"$JS.API.STREAM.INFO.{spec.stream}", {}, patience_s=5.0)
    sources = (info.get("sources") if isinstance(info, dict) else None) or []
    if not sources:
        return False
    source = sources[0]
    active_ns = int(source.get("active", 0))
    if 0 <= active_ns < inactive_s * _NS:
        return False
    after = int(source.get("seq", 0)) + 1
    # A direct get: any replica of the run stream answers, even while it elects a leader.
    js = nc.jetstream(timeout=2.0)
    try:
        await js.get_msg(RUN_STREAM, seq=after, subject=spec.subject, direct=True, next=True)
    except nats.js.errors.NotFoundError:
        return False
    return True


async def restart_sourcing(nc: NATS, spec: FeedSpec) -> bool:
    """Make the feed's leader step down: the new leader sets its source up again at once,
    from the last sequence sourced (nothing lost, nothing repeated). False for a feed with one
    replica (no other leader to take over)."""
    done = await _api(nc, f"$JS.API.STREAM.LEADER.STEPDOWN.{spec.stream}", {}, patience_s=5.0)
    return bool(isinstance(done, dict) and done.get("success"))
