"""Recorded runs replay against the current code (Temporal's replayer idea).

Each file in `recorded/` is a real run's event log, captured from the running system. The
test folds it with today's scheduler and checks two things: before every scheduler decision
in the log, today's `decide` makes the same decision (same events, same nodes, same results);
and the fully folded run ends as it ended then. A change that would make old runs replay
differently fails here.
"""

from __future__ import annotations

import json
from itertools import groupby
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts.base import Event
from contracts.catalog import EventCodec
from contracts.nodes import NodeCompleted
from contracts.runs import RunRequested
from services.scheduler.domain import RunState, decide, evolve

pytestmark = pytest.mark.replay

RECORDED = sorted((Path(__file__).parent / "recorded").glob("*.json"))
CODEC = EventCodec()


def decode(record: dict[str, Any]) -> Event:
    (event,) = CODEC.decode(msgspec.json.encode([record["event"]]))
    assert isinstance(event, Event), record
    return event


def shape(event: Event) -> tuple[Any, ...]:
    """What a decision must reproduce: the event, its node, its status and pure output."""
    out: tuple[Any, ...] = (
        type(event).__name__,
        getattr(event, "node_id", None),
        getattr(event, "status", None),
    )
    if isinstance(event, NodeCompleted) and event.node_type not in ("cron",):
        out += (json.dumps(event.output, sort_keys=True),)
    return out


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_recorded_run_replays_to_the_same_decisions_and_end(path: Path) -> None:
    recorded = json.loads(path.read_text())
    messages = [
        list(group) for _, group in groupby(recorded["events"], key=lambda r: r["sequence"])
    ]
    first = decode(messages[0][0])
    assert isinstance(first, RunRequested)
    state = RunState.from_request("RUN", first, messages[0][0]["sequence"])
    checked = 0
    for message in messages[1:]:
        events = [decode(r) for r in message]
        if ".sched." in message[0]["subject"]:
            now = max(
                (getattr(e, "finished_at_ms", 0) or getattr(e, "started_at_ms", 0) for e in events),
                default=0,
            )
            decision = decide(state.copy(), now or 1)
            produced = [shape(e) for _, batch in decision.batches[:1] for e in batch]
            assert produced == [shape(e) for e in events], (
                f"decision before seq {message[0]['sequence']}"
            )
            checked += 1
        for event in events:
            evolve(state, event, message[0]["sequence"])
    assert checked >= 1
    assert state.completed is not None
    assert state.completed.status == recorded["status"]
    assert state.completed.outputs == recorded["outputs"]
    assert not decide(state.copy(), 1).batches  # a finished run decides nothing more
