"""The scheduler and a human review (pure domain): a pending result pauses the run: its review
branch runs at once with the pending payload, nothing new starts on the main path, what was
running finishes and is recorded, and only then is the pause announced; the agent's final
result resumes the run without running the review branch again."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.base import Event
from contracts.nodes import NodeCompleted, NodeDispatched
from contracts.runs import RunCompleted, RunPaused, RunRequested, RunResumed
from services.scheduler.domain import RunState, decide, evolve
from tests.unit.scheduler.driver import edge, node

pytestmark = pytest.mark.unit

PAYLOAD = {"decision": None, "reviewUrl": "http://h/review/t", "requestId": "q1"}


class Run:
    def __init__(self, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
        self.state = RunState.from_request(
            "r", RunRequested(workflow_id="wf", nodes=nodes, edges=edges), 1
        )
        self.seq = 1
        self.now = 1_000

    def decide(self) -> list[Event]:
        work = self.state.copy()
        events = decide(work, self.now).events
        self.now += 10
        self.seq += 1
        work.last_seq = self.seq
        self.state = work
        return events

    def fold(self, event: Event) -> None:
        self.seq += 1
        evolve(self.state, event, self.seq)


def result(
    d: NodeDispatched, status: str = "success", output: Any = None, **meta: Any
) -> NodeCompleted:
    return NodeCompleted(
        invocation_id=d.invocation_id,
        node_id=d.node_id,
        node_label=d.node_label,
        node_type=d.node_type,
        status=status,  # type: ignore[arg-type]
        output=output if output is not None else {"ok": d.node_label},
        metadata=meta,
    )


def dispatched(events: list[Event]) -> dict[str, NodeDispatched]:
    return {e.node_label: e for e in events if isinstance(e, NodeDispatched)}


def test_a_pause_drains_what_runs_waits_on_the_main_path_and_resumes() -> None:
    nodes = [
        node("in", "textInput", "in"),
        node("a", "agent", "writer", hitlEnabled=True),
        node("out", "output", "answer", message="$writer.text"),
        node("s", "http", "slow", curl="curl http://x"),
        node("after", "set", "after", mappings=[]),
        node("n", "http", "notify", curl="curl http://x/$writer.reviewUrl"),
    ]
    edges = [
        edge("in", "a"),
        edge("a", "out"),
        edge("in", "s"),
        edge("s", "after"),
        edge("a", "n", source_handle="hitl"),
    ]
    run = Run(nodes, edges)
    first = dispatched(run.decide())
    assert set(first) == {"writer", "slow"}

    run.fold(result(first["writer"], "pending", PAYLOAD, review_request_id="q1"))
    paused = run.decide()
    review = dispatched(paused)
    assert set(review) == {"notify"}  # the review branch runs at once ...
    assert review["notify"].review_branch is True
    assert review["notify"].inputs == {"writer": PAYLOAD}  # ... with the pending payload
    assert not any(isinstance(e, RunPaused) for e in paused)  # slow still runs

    run.fold(result(first["slow"]))
    after_slow = run.decide()
    # the main path waits: `after` (ready now) does not run during the pause
    assert not any(isinstance(e, NodeCompleted) and e.node_label == "after" for e in after_slow)
    assert not any(isinstance(e, RunPaused) for e in after_slow)  # notify still runs

    run.fold(result(review["notify"]))
    announced = run.decide()
    (pause,) = [e for e in announced if isinstance(e, RunPaused)]
    assert pause.request_id == "q1"
    assert pause.outputs == {"writer": PAYLOAD}
    assert run.decide() == []  # announced once

    final = {"text": "done"}
    run.fold(result(first["writer"], output=final, skip_source_handles=["hitl"]))
    resumed = run.decide()
    assert isinstance(resumed[0], RunResumed)
    labels = [e.node_label for e in resumed if isinstance(e, NodeCompleted)]
    assert "after" in labels
    assert "answer" in labels
    assert not dispatched(resumed)  # the review branch does not run again
    (done,) = [e for e in resumed if isinstance(e, RunCompleted)]
    assert done.status == "success"


def test_without_a_pause_the_review_branch_is_skipped() -> None:
    nodes = [
        node("in", "textInput", "in"),
        node("a", "agent", "writer", hitlEnabled=True),
        node("n", "http", "notify", curl="curl http://x"),
    ]
    run = Run(nodes, [edge("in", "a"), edge("a", "n", source_handle="hitl")])
    first = dispatched(run.decide())
    run.fold(result(first["writer"]))
    events = run.decide()
    assert not dispatched(events)
    skipped = [e for e in events if isinstance(e, NodeCompleted) and e.node_label == "notify"]
    assert [e.status for e in skipped] == ["skipped"]
