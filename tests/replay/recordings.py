"""Reading replay recordings (`recorded/*.json`, written by `capture.py`) into typed messages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

import msgspec

from contracts.base import Event
from contracts.catalog import EventCodec

RECORDED = sorted((Path(__file__).parent / "recorded").glob("*.json"))
CODEC = EventCodec()

# Fields that carry the clock of the recording: a replay made now cannot reproduce them.
CLOCK_FIELDS = frozenset(
    {
        "started_at_ms",
        "finished_at_ms",
        "dispatched_at_ms",
        "fire_at_ms",
        "execution_time_ms",
        "requested_at_ms",
        "elapsed_ms",
    }
)


@dataclass(frozen=True)
class Message:
    subject: str
    sequence: int
    recorded_at_ms: int
    events: list[Event]

    @property
    def aggregate(self) -> str:
        return self.subject.split(".")[1]  # run | agent | work


@dataclass(frozen=True)
class Recording:
    name: str
    status: str
    outputs: Any
    messages: list[Message]
    # The run's id when it was recorded (ids derived from it, such as idempotency keys, can
    # then be compared); recordings made before it was kept replay as "RUN".
    run_id: str | None = None

    def comparable(self, event: Event) -> dict[str, Any]:
        found = comparable(event)
        if self.run_id is None:
            for derived in ("idempotency_key", "child_run_id"):
                found.pop(derived, None)
        return found


def load(path: Path) -> Recording:
    raw = json.loads(path.read_text())
    messages = []
    for _, group in groupby(raw["events"], key=lambda r: r["sequence"]):
        records = list(group)
        messages.append(
            Message(
                subject=records[0]["subject"],
                sequence=records[0]["sequence"],
                recorded_at_ms=int(records[0].get("recorded_at_ms", 0)),
                events=[decode(r) for r in records],
            )
        )
    return Recording(path.stem, raw["status"], raw["outputs"], messages, raw.get("run_id"))


def decode(record: dict[str, Any]) -> Event:
    (event,) = CODEC.decode(msgspec.json.encode([record["event"]]))
    assert isinstance(event, Event), record
    return event


def comparable(event: Event) -> dict[str, Any]:
    """An event as a replay must reproduce it: every field but the clock's."""
    data = msgspec.to_builtins(event)
    assert isinstance(data, dict)
    return {k: v for k, v in data.items() if k not in CLOCK_FIELDS}
