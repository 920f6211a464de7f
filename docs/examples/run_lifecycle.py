"""Follow every Heym run's lifecycle from the event log, as an outside consumer would.

    python docs/examples/run_lifecycle.py --nats nats://127.0.0.1:4222 --durable my-audit

A plain nats-py program with a durable consumer of its own on the run stream. It prints one
JSON line per lifecycle event (a run requested, started, ended; a cancel requested), reads
only the public contract types (`contracts/`), and acknowledges each message after printing
it, so a restart resumes where it stopped: nothing is skipped, and a line is printed twice
only if the program died between printing it and acknowledging its message (at least once).

`--max N` exits after N lines (handy for scripts and tests); `--from-start` makes a new
durable consumer start at the beginning of the stream instead of at new events.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

import nats
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts.catalog import BatchDecodeError, EventCodec
from contracts.runs import CancelRequested, RunCompleted, RunRequested, RunStarted

STREAM = "HEYM_RUNS"
# One wildcard filter (the run's commands and the scheduler's decisions are both under it).
FILTER = "heym.run.>"


def lifecycle(subject: str, event: object) -> dict[str, object] | None:
    run_id = subject.split(".")[2]
    if isinstance(event, RunRequested):
        return {
            "run_id": run_id,
            "event": "requested",
            "workflow_id": event.workflow_id,
            "trigger_source": event.trigger_source,
            "parent_run_id": event.parent.run_id if event.parent else None,
        }
    if isinstance(event, RunStarted):
        return {"run_id": run_id, "event": "started", "at_ms": event.started_at_ms}
    if isinstance(event, CancelRequested):
        return {"run_id": run_id, "event": "cancel_requested", "reason": event.reason}
    if isinstance(event, RunCompleted):
        return {
            "run_id": run_id,
            "event": "completed",
            "status": event.status,
            "error": event.error,
            "execution_time_ms": event.execution_time_ms,
        }
    return None


async def follow(nats_url: str, durable: str, *, max_lines: int, from_start: bool) -> None:
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    codec = EventCodec()
    config = ConsumerConfig(
        durable_name=durable,
        filter_subject=FILTER,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL if from_start else DeliverPolicy.NEW,
        ack_wait=30,
    )
    # Binds to the durable consumer if it exists (and so resumes), creates it otherwise.
    sub = await js.pull_subscribe(FILTER, durable=durable, stream=STREAM, config=config)
    printed = 0
    try:
        while max_lines <= 0 or printed < max_lines:
            try:
                msgs = await sub.fetch(64, timeout=1.0)
            except nats.errors.TimeoutError:
                continue
            for msg in msgs:
                try:
                    events = codec.decode(msg.data)
                except BatchDecodeError:
                    events = []  # not Heym's: skip it
                for event in events:
                    line = lifecycle(msg.subject, event)  # unknown types are skipped too
                    if line is not None:
                        print(json.dumps(line), flush=True)
                        printed += 1
                await msg.ack()
    finally:
        await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nats", default="nats://127.0.0.1:4222")
    parser.add_argument("--durable", default="run-lifecycle-example")
    parser.add_argument("--max", type=int, default=0)
    parser.add_argument("--from-start", action="store_true")
    args = parser.parse_args()
    try:
        asyncio.run(follow(args.nats, args.durable, max_lines=args.max, from_start=args.from_start))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
