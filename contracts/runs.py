"""Run lifecycle events: a run requested, started and ended, and requests into a running run."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.base import Event

RunStatus = Literal["running", "success", "error", "pending", "cancelled"]


class ParentLink(msgspec.Struct, frozen=True, kw_only=True):
    """Where a child run was started from: the parent run and the node invocation waiting on it."""

    run_id: str
    invocation_id: str
    node_id: str
    node_label: str = ""
    node_type: str = "execute"
    attempt: int = 1
    wait: bool = True
    # "execute" for an Execute node, "agent" for an agent's call_sub_workflow tool.
    via: str = "execute"
    # For `via="agent"`: the tool call the child run answers; its end is appended to the agent's
    # aggregate as that call's `agent.tool_result`.
    tool_call_id: str = ""
    turn: int = 0
    tool_name: str = ""


class WorkflowSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A workflow as it was when a run started; children run from these, never from later edits."""

    id: str
    name: str = ""
    nodes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    edges: list[dict[str, Any]] = msgspec.field(default_factory=list)


class RunRequested(Event, tag="run.requested", frozen=True):
    """Someone asked for a workflow to run; the workflow is snapshotted so replay never depends
    on later edits (a resumed run uses the workflow it started with)."""

    workflow_id: str
    workflow_name: str = ""
    owner_id: str = ""
    nodes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    edges: list[dict[str, Any]] = msgspec.field(default_factory=list)
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    test_run: bool = False
    trigger_source: str = "API"
    parent: ParentLink | None = None
    depth: int = 0
    requested_at_ms: int = 0
    # Every workflow reachable through Execute nodes or agents' sub-workflows, by id.
    workflow_cache: dict[str, WorkflowSnapshot] = msgspec.field(default_factory=dict)
    timezone: str = "UTC"
    # The W3C context of whatever started the run (an inbound request's `traceparent`, the
    # Execute node's span, the agent's `call_sub_workflow` tool span): the run span's parent.
    traceparent: str | None = None
    # The run's own root span (`heym.workflow.execute`): its trace id, its span id (derived
    # from the run id) and the sampling decision, taken once when the run was requested.
    # Every span of the run is in this trace; None when tracing was off and nothing called in.
    run_traceparent: str | None = None
    # Where the scheduler reports the run's end (`RunEndReported`), when someone outside the
    # run waits on it without holding anything in memory: today a conversation's command
    # subject (`heym.chat.<conversation>.cmd`, see `subjects.is_report_target`).
    report_to: str = ""
    # The owner's global variables when the run started (`$global`; a child run gets its
    # parent's, overlaid with the parent's `$vars`). Replay reads these, never the live store.
    globals: dict[str, Any] = msgspec.field(default_factory=dict)
    # Where the request came from (its Origin, else forwarded headers, else its own base URL):
    # the base of human review links when HEYM_PUBLIC_URL is not set (Heym §5.3).
    public_base_url: str = ""
    # Started on a paused agent's review branch (by a node or agent there): none of its agents
    # may pause for a review of their own.
    review_branch: bool = False


class CancelRequested(Event, tag="run.cancel_requested", frozen=True):
    reason: str = "cancelled by user"


class RunStarted(Event, tag="run.started", frozen=True):
    workflow_id: str
    started_at_ms: int


class RunOutputReady(Event, tag="run.output_ready", frozen=True):
    """An `output` node with `allowDownstream` succeeded: callers waiting on the run may answer
    with these outputs now; the run goes on."""

    node_id: str
    outputs: dict[str, Any] = msgspec.field(default_factory=dict)
    execution_time_ms: float = 0.0


class RunCompleted(Event, tag="run.completed", frozen=True):
    """The run ended; `status` is `success`, `error` or `cancelled`."""

    status: Literal["success", "error", "cancelled"]
    outputs: dict[str, Any] = msgspec.field(default_factory=dict)
    error: str | None = None
    http_status: int | None = None
    execution_time_ms: float = 0.0
    finished_at_ms: int = 0


class RunEndReported(Event, tag="run.end_reported", frozen=True):
    """A run's end, appended by the scheduler to the run's `report_to` subject (message id
    `run-end-<run>`, so a repeated report is stored once)."""

    run_id: str
    workflow_id: str
    workflow_name: str = ""
    status: Literal["success", "error", "cancelled"] = "success"
    outputs: dict[str, Any] = msgspec.field(default_factory=dict)
    error: str | None = None
    execution_time_ms: float = 0.0
    finished_at_ms: int = 0


class RunPauseReported(Event, tag="run.pause_reported", frozen=True):
    """A run paused for a human review, appended by the scheduler to the run's `report_to`
    subject (message id `run-paused-<run>-<request>`): the Heym Agent's run tools answer
    `pending` with the review (its link) instead of waiting. The run's end follows later as
    a `RunEndReported`."""

    run_id: str
    workflow_id: str
    workflow_name: str = ""
    request_id: str = ""
    # the innermost paused agent's pending payload (`reviewUrl`, `summary`, `draftText`, ...)
    review: dict[str, Any] = msgspec.field(default_factory=dict)
    outputs: dict[str, Any] = msgspec.field(default_factory=dict)
    execution_time_ms: float = 0.0


class RunPaused(Event, tag="run.paused", frozen=True):
    """The run waits for a human review (status `pending`): nothing new starts on its main
    path, what was running has finished. `outputs` are Heym's pending outputs
    (`{label: pending payload}`); `review` is the innermost paused agent's pending payload
    (with `reviewUrl`), also for a review inside a sub-agent or a child run."""

    node_id: str
    request_id: str
    outputs: dict[str, Any] = msgspec.field(default_factory=dict)
    review: dict[str, Any] = msgspec.field(default_factory=dict)
    execution_time_ms: float = 0.0


class RunResumed(Event, tag="run.resumed", frozen=True):
    """The paused node reported again after its review was decided: the run goes on."""

    node_id: str
    request_id: str


RUN_LIFECYCLE_EVENTS: tuple[type[Event], ...] = (
    RunRequested,
    CancelRequested,
    RunStarted,
    RunOutputReady,
    RunCompleted,
    RunEndReported,
    RunPauseReported,
    RunPaused,
    RunResumed,
)
