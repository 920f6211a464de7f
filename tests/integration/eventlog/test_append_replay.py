"""The event log against a real JetStream: concurrency, dedupe, ordering, tails, limits."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.base import UnknownEvent
from contracts.runs import CancelRequested, RunCompleted, RunStarted
from libs.eventlog import (
    ConcurrencyConflict,
    EventLog,
    PayloadTooLarge,
    ReplicaLag,
    ServerTooOld,
)
from libs.eventlog.stream import check_version

pytestmark = pytest.mark.integration


def started(n: int = 0) -> RunStarted:
    return RunStarted(workflow_id=f"wf-{n}", started_at_ms=n)


async def test_racing_writers_exactly_one_wins(event_log: EventLog, run_id: str) -> None:
    subject = subjects.run_decisions(run_id, "none")
    first = await event_log.append(subject, [started()], expected_sequence=0)

    async def write(n: int) -> int:
        appended = await event_log.append(subject, [started(n)], expected_sequence=first.sequence)
        return appended.sequence

    results = await asyncio.gather(write(1), write(2), return_exceptions=True)
    winners = [r for r in results if isinstance(r, int)]
    losers = [r for r in results if isinstance(r, ConcurrencyConflict)]
    assert len(winners) == 1
    assert len(losers) == 1
    assert losers[0].expected == first.sequence
    assert losers[0].actual == winners[0]

    events = await event_log.replay(run_id)
    assert events[0].event == started()
    assert len(events) == 2  # the loser's event is nowhere


async def test_new_aggregate_requires_expected_zero(event_log: EventLog, run_id: str) -> None:
    subject = subjects.node(run_id, "n1")
    await event_log.append(subject, [started()], expected_sequence=0)
    with pytest.raises(ConcurrencyConflict):
        await event_log.append(subject, [started(1)], expected_sequence=0)


async def test_run_scope_conflict_spans_subjects(event_log: EventLog, run_id: str) -> None:
    decision = await event_log.append(subjects.run_decisions(run_id, "none"), [started()])
    await event_log.append(subjects.node(run_id, "a"), [started(1)])
    with pytest.raises(ConcurrencyConflict):
        await event_log.append(
            subjects.run_decisions(run_id, "none"),
            [started(2)],
            expected_sequence=decision.sequence,
            scope=subjects.run_all(run_id),
        )
    last = await event_log.last_sequence(subjects.run_all(run_id))
    ok = await event_log.append(
        subjects.run_decisions(run_id, "none"),
        [started(2)],
        expected_sequence=last,
        scope=subjects.run_all(run_id),
    )
    assert ok.sequence > last


async def test_replay_in_stream_order_across_aggregates(event_log: EventLog, run_id: str) -> None:
    other = uuid.uuid4().hex
    written = []
    for i in range(30):
        subject = [
            subjects.run_commands(run_id),
            subjects.run_decisions(run_id, "tool_sandbox"),
            subjects.node(run_id, f"n{i % 4}"),
        ][i % 3]
        await event_log.append(subject, [started(i)])
        await event_log.append(subjects.node(other, "x"), [started(1000 + i)])
        written.append((subject, i))
    envs = await event_log.replay(run_id)
    assert [(e.subject, e.event.workflow_id) for e in envs] == [  # type: ignore[union-attr]
        (s, f"wf-{i}") for s, i in written
    ]
    sequences = [e.sequence for e in envs]
    assert sequences == sorted(sequences)
    assert all(e.run_id == run_id for e in envs)
    # a replay from a position returns only the tail
    tail = await event_log.replay(run_id, after=sequences[19])
    assert [e.sequence for e in tail] == sequences[20:]


async def test_batch_is_one_message_with_indexed_events(event_log: EventLog, run_id: str) -> None:
    appended = await event_log.append(
        subjects.run_decisions(run_id, "none"),
        [started(1), CancelRequested(reason="r"), RunCompleted(status="success")],
        correlation_id="corr-1",
        causation_id="cause-1",
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    )
    envs = await event_log.replay(run_id)
    assert [e.sequence for e in envs] == [appended.sequence] * 3
    assert [e.index for e in envs] == [0, 1, 2]
    assert [e.event_id for e in envs] == [f"{appended.message_id}:{i}" for i in range(3)]
    assert {e.correlation_id for e in envs} == {"corr-1"}
    assert {e.causation_id for e in envs} == {"cause-1"}
    assert envs[0].traceparent == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert isinstance(envs[2].event, RunCompleted)


async def test_same_message_id_is_stored_once(event_log: EventLog, run_id: str) -> None:
    subject = subjects.node(run_id, "n1")
    a = await event_log.append(subject, [started(1)], message_id="fixed-id-1")
    b = await event_log.append(subject, [started(1)], message_id="fixed-id-1")
    assert not a.duplicate
    assert b.duplicate
    assert b.sequence == a.sequence
    assert len(await event_log.replay(run_id)) == 1


async def test_retried_conditional_append_is_a_duplicate_not_a_conflict(
    event_log: EventLog, run_id: str
) -> None:
    """A writer whose ack was lost retries with the same id and expectation: it must learn
    that its own write landed rather than see a conflict with itself."""
    subject = subjects.node(run_id, "n1")
    a = await event_log.append(subject, [started(1)], expected_sequence=0, message_id="m-1")
    b = await event_log.append(subject, [started(1)], expected_sequence=0, message_id="m-1")
    assert b.duplicate
    assert b.sequence == a.sequence


async def test_empty_run_replays_to_nothing(event_log: EventLog) -> None:
    assert await event_log.replay(uuid.uuid4().hex) == []
    assert await event_log.last_sequence(subjects.run_all(uuid.uuid4().hex)) == 0


async def test_unknown_event_tags_are_kept_not_fatal(
    nc: NATS, event_log: EventLog, run_id: str
) -> None:
    js = nc.jetstream()
    await js.publish(
        subjects.node(run_id, "n1"),
        b'[{"type":"future.thing","x":1},{"type":"run.started","workflow_id":"w","started_at_ms":5,"new_field":true}]',
    )
    envs = await event_log.replay(run_id)
    assert isinstance(envs[0].event, UnknownEvent)
    assert envs[0].event.type == "future.thing"
    # a known event with a field this build does not know still decodes (additive evolution)
    assert envs[1].event == RunStarted(workflow_id="w", started_at_ms=5)


async def test_tail_delivers_history_then_live_events(event_log: EventLog, run_id: str) -> None:
    subject = subjects.run_decisions(run_id, "none")
    first = await event_log.append(subject, [started(1)])
    await event_log.append(subject, [started(2)])
    async with event_log.tail(subjects.run_all(run_id), after=first.sequence) as queue:
        got = await asyncio.wait_for(queue.get(), 5)
        assert got.event == started(2)
        await event_log.append(subject, [started(3)])
        got = await asyncio.wait_for(queue.get(), 5)
        assert got.event == started(3)


async def test_oversized_batch_is_refused_clearly(event_log: EventLog, run_id: str) -> None:
    big = RunCompleted(status="success", outputs={"blob": "x" * (9 * 1024 * 1024)})
    with pytest.raises(PayloadTooLarge, match="over the"):
        await event_log.append(subjects.node(run_id, "n1"), [big])
    assert await event_log.replay(run_id) == []


def test_servers_older_than_2_12_are_refused() -> None:
    with pytest.raises(ServerTooOld, match=r"2\.9\.10"):
        check_version((2, 9, 10))
    check_version((2, 12, 0))


async def test_replay_skips_messages_that_are_not_event_batches(
    nc: NATS, event_log: EventLog, run_id: str
) -> None:
    await nc.jetstream().publish(subjects.node(run_id, "n1"), b"\x00 not json")
    await event_log.append(subjects.node(run_id, "n1"), [started(1)])
    assert [e.event for e in await event_log.replay(run_id)] == [started(1)]


async def test_read_recent_matches_read(event_log: EventLog, run_id: str) -> None:
    """Direct-get reads give what a consumer read gives: same events, order, sequences and
    times, after any position, across several batches and subjects of a wildcard filter."""
    first = subjects.run_decisions(run_id, "none")
    second = subjects.run_commands(run_id)
    for n in range(300):  # more than one direct-get batch
        await event_log.append(first if n % 3 else second, [started(n), started(n + 1000)])
    everything = await event_log.replay(run_id)
    assert len(everything) == 600
    for after in (0, everything[0].sequence, everything[401].sequence, everything[-1].sequence):
        want = await event_log.read(subjects.run_all(run_id), after=after)
        got = await event_log.read_recent(subjects.run_all(run_id), after=after)
        assert [(e.sequence, e.index, e.subject, e.event) for e in got] == [
            (e.sequence, e.index, e.subject, e.event) for e in want
        ]
        assert [e.recorded_at for e in got] == [e.recorded_at for e in want]
    assert await event_log.read_recent(subjects.run_all(uuid.uuid4().hex)) == []


async def test_a_read_through_a_sequence_is_asked_again_until_it_reaches_it(
    event_log: EventLog, run_id: str
) -> None:
    """A replica that lags answers without the newest messages; a reader that knows a sequence
    is on the subject (the message that woke it) reads again until the answer reaches it."""
    subject = subjects.run_decisions(run_id, "none")
    first = await event_log.append(subject, [started(1)])
    # The next message's sequence is at least this: the reader "knows" it before it is there,
    # as a reader served by a lagging replica knows the message it was delivered.
    through = await event_log.last_sequence(">") + 1

    async def append_later() -> int:
        await asyncio.sleep(0.3)
        return (await event_log.append(subject, [started(2)])).sequence

    later = asyncio.create_task(append_later())
    read = await event_log.replay(run_id, through=through)
    assert [e.sequence for e in read] == [first.sequence, await later]


async def test_a_read_that_never_reaches_its_sequence_says_the_replica_lags(
    event_log: EventLog, run_id: str
) -> None:
    subject = subjects.run_decisions(run_id, "none")
    first = await event_log.append(subject, [started(1)])
    with pytest.raises(ReplicaLag):
        await event_log.read(subject, through=first.sequence + 10**9, timeout=1.0)
