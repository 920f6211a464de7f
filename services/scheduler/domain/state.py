"""`RunState`: everything the scheduler knows about one run, as a fold of the run's events.

The state is mutable for speed, but only `evolve` changes it, and a decision works on a
`copy()` that replaces the state only once its events are durably appended.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from contracts.nodes import ChildRunStarted, NodeAttemptFailed, NodeCompleted, TimerScheduled
from contracts.runs import RunCompleted, RunRequested
from libs.workflow import Graph


@dataclass
class LoopState:
    items: list[Any]
    index: int
    total: int
    results: list[Any]
    # After the `done` branch, loop-backs (e.g. from body nodes skipped at the end) are ignored.
    done: bool = False


# Per-node status in the current epoch (loop iterations reset their body to "absent").
SCHEDULED = "scheduled"  # dispatched to a service, or a child run is running
WAITING = "waiting"  # a durable timer is pending (wait node, retry back-off)
FAILED = "failed"  # an attempt failed; the scheduler has not decided what follows
SUCCESS = "success"
ERROR = "error"
SKIPPED = "skipped"
DONE = frozenset({SUCCESS, ERROR, SKIPPED})


@dataclass
class RunState:
    run_id: str
    request: RunRequested
    graph: Graph
    last_seq: int = 0
    started_at_ms: int = 0
    started: bool = False
    completed: RunCompleted | None = None
    cancel_requested: bool = False
    cancel_reason: str = ""
    output_ready: bool = False
    status: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    skip_marks: set[str] = field(default_factory=set)
    disabled: set[str] = field(default_factory=set)
    ignored_handles: dict[str, set[str]] = field(default_factory=dict)
    loops: dict[str, LoopState] = field(default_factory=dict)
    loop_back: dict[str, Any] = field(default_factory=dict)
    rearmed: set[str] = field(default_factory=set)
    vars: dict[str, Any] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    inflight: dict[str, str] = field(default_factory=dict)
    failures: dict[str, NodeAttemptFailed] = field(default_factory=dict)
    timers: dict[str, TimerScheduled] = field(default_factory=dict)
    fired: list[str] = field(default_factory=list)
    children: dict[str, ChildRunStarted] = field(default_factory=dict)
    next_invocation: int = 1
    first_error: NodeCompleted | None = None
    error_flow: bool = False
    error_flow_output: dict[str, Any] | None = None
    http_status: int | None = None
    # `$credentials` of the run's owner, decrypted when the run is loaded. Never recorded:
    # expressions use them and every recorded output is masked with them.
    credentials: dict[str, str] = field(default_factory=dict, repr=False)
    # Human review: nodes paused (their latest pending result), the nodes of the review
    # branches fired at a pause, the nodes that ever paused, and the review the run's last
    # `run.paused` announced (None while it runs).
    paused: dict[str, NodeCompleted] = field(default_factory=dict)
    review_branch: set[str] = field(default_factory=set)
    hitl_fired: set[str] = field(default_factory=set)
    run_paused: str | None = None
    run_paused_node: str = ""

    @classmethod
    def from_request(cls, run_id: str, request: RunRequested, sequence: int) -> RunState:
        return cls(
            run_id=run_id,
            request=request,
            graph=Graph(request.nodes, request.edges),
            last_seq=sequence,
            disabled=set(),
        )

    def copy(self) -> RunState:
        """A working copy for one decision: containers copied, values shared (never mutated)."""
        return replace(
            self,
            status=dict(self.status),
            outputs=dict(self.outputs),
            counts=dict(self.counts),
            skip_marks=set(self.skip_marks),
            disabled=set(self.disabled),
            ignored_handles={k: set(v) for k, v in self.ignored_handles.items()},
            loops={
                k: LoopState(v.items, v.index, v.total, list(v.results))
                for k, v in self.loops.items()
            },
            loop_back=dict(self.loop_back),
            rearmed=set(self.rearmed),
            vars=dict(self.vars),
            attempts=dict(self.attempts),
            inflight=dict(self.inflight),
            failures=dict(self.failures),
            timers=dict(self.timers),
            fired=list(self.fired),
            children=dict(self.children),
            paused=dict(self.paused),
            review_branch=set(self.review_branch),
            hitl_fired=set(self.hitl_fired),
        )

    @property
    def depth(self) -> int:
        return self.request.depth

    def node_data(self, node_id: str) -> dict[str, Any]:
        return dict(self.graph.data[node_id])

    def is_finished(self) -> bool:
        return self.completed is not None
