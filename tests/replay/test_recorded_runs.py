"""Recorded runs replay against the current scheduler (Temporal's replayer idea).

Each file in `recorded/` is a real run's event log, captured from the running system
(`capture.py`). The test folds the run's own subjects (`heym.run.RUN.…`) with today's
scheduler and checks that before every recorded decision today's `decide` makes the same
decision: every batch of it (a decision split into several messages is compared message by
message), every event of every batch, every field but the clock's, and the service each
batch was addressed to. The fully folded run must end as it ended then. A change that would
make an old run replay differently fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.runs import RunRequested
from services.scheduler.domain import RunState, decide, evolve
from tests.replay.recordings import RECORDED, Message, load

pytestmark = pytest.mark.replay


def _clock(message: Message) -> int:
    """The decision's `now`, as far as its events tell (pure nodes may read the clock)."""
    times = [
        getattr(e, "finished_at_ms", 0) or getattr(e, "started_at_ms", 0) for e in message.events
    ]
    return max(times, default=0) or 1


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_recorded_run_replays_to_the_same_decisions_and_end(path: Path) -> None:
    recording = load(path)
    messages = [m for m in recording.messages if m.aggregate == "run"]
    first = messages[0].events[0]
    assert isinstance(first, RunRequested)
    state = RunState.from_request(recording.run_id or "RUN", first, messages[0].sequence)
    checked = 0
    pending: list[tuple[str, list[object]]] = []  # batches of a split decision still to come
    for message in messages[1:]:
        if ".sched." in message.subject:
            if not pending:
                pending = list(decide(state.copy(), _clock(message)).batches)
                assert pending, f"today's scheduler decides nothing before seq {message.sequence}"
            target, batch = pending.pop(0)
            assert message.subject.endswith(f".sched.{target}"), (message.subject, target)
            assert [recording.comparable(e) for e in batch] == [  # type: ignore[arg-type]
                recording.comparable(e) for e in message.events
            ], f"decision batch at seq {message.sequence}"
            checked += 1
        else:
            assert not pending, f"a split decision was interrupted at seq {message.sequence}"
        for event in message.events:
            evolve(state, event, message.sequence)
    assert checked >= 1
    assert not pending
    assert state.completed is not None
    assert state.completed.status == recording.status
    assert state.completed.outputs == recording.outputs
    assert not decide(state.copy(), 1).batches  # a finished run decides nothing more
