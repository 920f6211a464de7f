"""Node events: work dispatched to a service, node results, retries, timers, child runs."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.base import Event
from contracts.runs import WorkflowSnapshot

NodeStatus = Literal["success", "error", "skipped", "pending"]


class NodeDispatched(Event, tag="node.dispatched", frozen=True):
    """The scheduler hands one node invocation to the service that executes it.

    Carries what the executor needs to resolve the node's expressions: the node as stored,
    its direct inputs and its upstream outputs (by label), and the run's variables.
    """

    invocation_id: str
    node_id: str
    node_label: str
    node_type: str
    service: str
    attempt: int = 1
    node: dict[str, Any] = msgspec.field(default_factory=dict)
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    upstream: dict[str, Any] = msgspec.field(default_factory=dict)
    vars: dict[str, Any] = msgspec.field(default_factory=dict)
    idempotency_key: str = ""
    dispatched_at_ms: int = 0
    timezone: str = "UTC"
    workflow_id: str = ""
    owner_id: str = ""
    depth: int = 0
    test_run: bool = False
    # For agent nodes: the workflow (sub-agents and canvas tool nodes are found in it) and
    # the sub-workflows the agent may call, as snapshotted when the run started.
    workflow: WorkflowSnapshot | None = None
    sub_workflows: dict[str, WorkflowSnapshot] = msgspec.field(default_factory=dict)
    trigger_source: str = "API"
    # The run's global variables (`$global` = these overlaid with `vars`).
    globals: dict[str, Any] = msgspec.field(default_factory=dict)
    # The node runs on a paused agent's `hitl` (review) branch: it may not pause itself.
    review_branch: bool = False


class NodeCompleted(Event, tag="node.completed", frozen=True):
    """A node invocation's result: by the scheduler for nodes it evaluates itself and for
    skipped nodes, by the executing service on the invocation's own subject otherwise."""

    invocation_id: str
    node_id: str
    node_label: str
    node_type: str
    status: NodeStatus
    output: Any = None
    error: str | None = None
    attempt: int = 1
    started_at_ms: int = 0
    finished_at_ms: int = 0
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class NodeRetryScheduled(Event, tag="node.retry_scheduled", frozen=True):
    """A failed attempt will be retried after `wait_s` (a durable timer)."""

    node_id: str
    node_label: str
    node_type: str
    failed_invocation_id: str
    attempt: int
    max_attempts: int
    wait_s: float
    error: str
    timer_id: str


class TimerScheduled(Event, tag="timer.scheduled", frozen=True):
    timer_id: str
    fire_at_ms: int
    node_id: str
    purpose: Literal["retry", "wait"]
    # The invocation the timer belongs to (a wait node completes under it).
    invocation_id: str = ""
    node_label: str = ""


class TimerFired(Event, tag="timer.fired", frozen=True):
    """Written by NATS itself (a scheduled message) when a timer's time has come."""

    timer_id: str


class ChildRunStarted(Event, tag="node.child_run_started", frozen=True):
    """An Execute node started a child run (its own event stream, linked to this one)."""

    invocation_id: str
    node_id: str
    child_run_id: str
    workflow_id: str
    wait: bool = True
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    attempt: int = 1
    node_label: str = ""


class NodeAttemptFailed(Event, tag="node.attempt_failed", frozen=True):
    """One attempt of a node failed, as reported by the service that ran it.

    The scheduler owns what happens next (a retry, the node's error branch, or the node's
    final error), so services never record a node's final failure themselves.
    """

    invocation_id: str
    node_id: str
    node_label: str
    node_type: str
    attempt: int
    error: str
    retryable: bool = True
    output: Any = None
    started_at_ms: int = 0
    finished_at_ms: int = 0
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


NODE_EVENTS: tuple[type[Event], ...] = (
    NodeDispatched,
    NodeCompleted,
    NodeRetryScheduled,
    TimerScheduled,
    TimerFired,
    ChildRunStarted,
    NodeAttemptFailed,
)
