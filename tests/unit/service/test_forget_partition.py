"""A replica that gets a partition (again) drops what it cached about that partition's runs."""

from __future__ import annotations

from dataclasses import dataclass

from libs.eventlog.feeds import partition_of_key
from libs.service.partitioned import forget_partition


@dataclass
class Actor:
    busy: bool
    stale: bool = False


def _runs_in(partition: int, partitions: int, count: int) -> list[str]:
    found, i = [], 0
    while len(found) < count:
        run = f"run-{i}"
        if partition_of_key(run, partitions) == partition:
            found.append(run)
        i += 1
    return found


def test_idle_actors_of_the_partition_go_busy_ones_reload_others_stay() -> None:
    idle, busy = _runs_in(3, 16, 2)
    (other,) = _runs_in(5, 16, 1)
    actors = {idle: Actor(busy=False), busy: Actor(busy=True), other: Actor(busy=False)}

    assert forget_partition(actors, 3, 16, lambda name: name) == 2

    assert idle not in actors
    assert actors[busy].stale  # it finishes its batch, then reloads before the next one
    assert not actors[other].stale
    assert other in actors


def test_the_key_is_what_the_feed_partitions_by() -> None:
    # agent actors are keyed by subject; the agent feed partitions them by run id
    (run,) = _runs_in(7, 16, 1)
    actors = {f"heym.agent.{run}.i2": Actor(busy=False)}
    assert forget_partition(actors, 7, 16, lambda subject: subject.split(".")[2]) == 1
    assert not actors
