"""`evolve(state, event, sequence)`: apply one recorded event to a run's state (no I/O, no clock).

Readiness is a dependency count per node (Heym's ready set): a node's count is the number of
gating active in-edges still to fire; completing or skipping a node fires its out-edges.
Branching nodes (condition, switch, loop, error branches) first mark the nodes only their
inactive branches reach as skipped, keeping nodes shared with the live branch (§2.3).
"""

from __future__ import annotations

from typing import Any, assert_never

from contracts.agents import AGENT_EVENTS
from contracts.base import Event, UnknownEvent
from contracts.memory import MEMORY_EVENTS, MEMORY_WORK_EVENTS
from contracts.nodes import (
    ChildRunStarted,
    NodeAttemptFailed,
    NodeCompleted,
    NodeDispatched,
    NodeRetryScheduled,
    TimerFired,
    TimerScheduled,
)
from contracts.review import REVIEW_EVENTS
from contracts.runs import (
    CancelRequested,
    RunCompleted,
    RunOutputReady,
    RunPaused,
    RunRequested,
    RunResumed,
    RunStarted,
)
from contracts.schedules import SCHEDULE_EVENTS
from contracts.tools import SANDBOX_TOOL_EVENTS
from contracts.workflows import HANDLE_DONE, HANDLE_ERROR, HANDLE_HITL, HANDLE_LOOP
from libs.workflow.graph import Edge
from services.scheduler.domain.state import (
    DONE,
    ERROR,
    FAILED,
    SCHEDULED,
    SKIPPED,
    SUCCESS,
    WAITING,
    LoopState,
    RunState,
)


def evolve(state: RunState, event: Event | UnknownEvent, sequence: int) -> None:
    if sequence > state.last_seq:
        state.last_seq = sequence
    if isinstance(event, UnknownEvent):
        return  # written by a newer build; nothing this build can fold
    _apply(state, event)


def _apply(state: RunState, event: Event) -> None:
    if isinstance(event, RunRequested):
        return  # the state was created from it
    if isinstance(event, RunStarted):
        state.started = True
        state.started_at_ms = event.started_at_ms
        for nid in state.graph.main:
            state.counts[nid] = len(state.graph.gating_in[nid])
        state.disabled |= set(state.graph.inactive)
    elif isinstance(event, NodeDispatched):
        _issued(state, event.invocation_id)
        state.status[event.node_id] = SCHEDULED
        state.inflight[event.invocation_id] = event.node_id
        state.attempts[event.node_id] = event.attempt
        _drop_timers(state, event.node_id)
    elif isinstance(event, ChildRunStarted):
        _issued(state, event.invocation_id)
        state.status[event.node_id] = SCHEDULED
        state.inflight[event.invocation_id] = event.node_id
        state.children[event.child_run_id] = event
        state.attempts[event.node_id] = event.attempt
    elif isinstance(event, NodeAttemptFailed):
        if event.node_id in state.graph.pre_skipped:
            return  # a tool node or sub-agent failing inside an agent: the agent's business
        _issued(state, event.invocation_id)
        was_inflight = state.inflight.pop(event.invocation_id, None) is not None
        if not was_inflight and state.status.get(event.node_id) in DONE:
            return  # a late report for a node already decided
        state.status[event.node_id] = FAILED
        state.paused.pop(event.node_id, None)
        state.attempts[event.node_id] = event.attempt
        state.failures[event.node_id] = event
        _drop_timers(state, event.node_id)
    elif isinstance(event, NodeRetryScheduled):
        state.failures.pop(event.node_id, None)
        state.status[event.node_id] = WAITING
    elif isinstance(event, TimerScheduled):
        if event.invocation_id:
            _issued(state, event.invocation_id)
        state.timers[event.timer_id] = event
        state.status[event.node_id] = WAITING
    elif isinstance(event, TimerFired):
        if event.timer_id in state.timers and event.timer_id not in state.fired:
            state.fired.append(event.timer_id)
    elif isinstance(event, NodeCompleted):
        _issued(state, event.invocation_id)
        if event.status == "pending":
            _paused(state, event)
            return
        state.inflight.pop(event.invocation_id, None)
        state.failures.pop(event.node_id, None)
        _drop_timers(state, event.node_id)
        complete(state, event)
    elif isinstance(event, CancelRequested):
        state.cancel_requested = True
        state.cancel_reason = event.reason
    elif isinstance(event, RunOutputReady):
        state.output_ready = True
    elif isinstance(event, RunCompleted):
        state.completed = event
    elif isinstance(event, RunPaused):
        state.run_paused = event.request_id
        state.run_paused_node = event.node_id
    elif isinstance(event, RunResumed):
        state.run_paused = None
    elif isinstance(
        event,
        (
            *AGENT_EVENTS,
            *SANDBOX_TOOL_EVENTS,
            *SCHEDULE_EVENTS,
            *REVIEW_EVENTS,
            *MEMORY_EVENTS,
            *MEMORY_WORK_EVENTS,
        ),
    ):
        return  # agent histories, work items, cron ticks, reviews, memory: not a run's events
    else:  # pragma: no cover - the catalogue and this fold must grow together
        assert_never(event)  # type: ignore[arg-type]


def _issued(state: RunState, invocation_id: str) -> None:
    if invocation_id.startswith("i") and invocation_id[1:].isdigit():
        state.next_invocation = max(state.next_invocation, int(invocation_id[1:]) + 1)


def _drop_timers(state: RunState, node_id: str) -> None:
    for tid in [t for t, ev in state.timers.items() if ev.node_id == node_id]:
        del state.timers[tid]
        if tid in state.fired:
            state.fired.remove(tid)


# -- human review -------------------------------------------------------------------------------


def _paused(state: RunState, event: NodeCompleted) -> None:
    """A node paused for a human review (its invocation goes on: it stays in flight). Its
    `hitl` branch runs now with the pending payload; for a later checkpoint it runs again."""
    nid = event.node_id
    graph = state.graph
    if nid not in graph.nodes or nid in graph.pre_skipped:
        return
    if event.invocation_id not in state.inflight or state.status.get(nid) in DONE:
        return  # a late marker for an invocation already ended
    state.paused[nid] = event
    state.status[nid] = SCHEDULED
    edges = [e for e in graph.out_edges.get(nid, []) if e.source_handle == HANDLE_HITL]
    if not edges:
        return
    branch = graph.reachable(e.target for e in edges)
    if nid in state.hitl_fired:
        if any(state.status.get(n) in (SCHEDULED, WAITING, FAILED) for n in branch):
            return  # the branch of the last checkpoint is still running: it is not doubled
        _reset(state, branch, running={nid})
    state.hitl_fired.add(nid)
    state.review_branch |= branch
    for e in edges:
        state.counts[e.target] = state.counts.get(e.target, 0) - 1


def pending_request(event: NodeCompleted) -> str:
    return str(event.metadata.get("review_request_id") or event.invocation_id)


# -- completion and propagation ----------------------------------------------------------------


def complete(state: RunState, event: NodeCompleted) -> None:
    nid = event.node_id
    graph = state.graph
    if nid not in graph.nodes or nid in graph.pre_skipped:
        return  # sub-agents and tool nodes run inside an agent, never as workflow nodes
    state.paused.pop(nid, None)
    if event.status == "error":
        state.status[nid] = ERROR
        if state.first_error is None and nid not in graph.error_flow:
            state.first_error = event
        return
    if event.status == SKIPPED:
        state.status[nid] = SKIPPED
        state.outputs.pop(nid, None)
        _fire_out_edges(state, nid, skipped=True)
        return
    if nid in graph.error_flow and not state.error_flow:
        # The error flow starts with its first result: its nodes count their own inputs.
        state.error_flow = True
        for n in graph.error_flow:
            state.counts[n] = len(graph.error_in.get(n, ()))
    state.status[nid] = SUCCESS
    state.outputs[nid] = event.output
    if nid in graph.error_flow and graph.types[nid] == "output" and state.error_flow_output is None:
        state.error_flow_output = {graph.labels[nid]: event.output}
    output: dict[str, Any] = event.output if isinstance(event.output, dict) else {}
    _apply_node_effects(state, nid, output, event)
    _fire_out_edges(state, nid, skipped=False)


def _apply_node_effects(
    state: RunState, nid: str, output: dict[str, Any], event: NodeCompleted
) -> None:
    graph = state.graph
    ntype = graph.types[nid]
    handles = event.metadata.get("skip_source_handles") or output.get("_skip_source_handles")
    if handles:
        state.ignored_handles[nid] = {str(h) for h in handles}
    if nid in state.hitl_fired:
        # The review branch ran at the pause: it never runs again after the resume.
        state.ignored_handles.setdefault(nid, set()).add(HANDLE_HITL)
    elif any(e.source_handle == HANDLE_HITL for e in graph.out_edges.get(nid, [])):
        # Heym also ran the review branch when the agent finished without pausing: fixed.
        _skip_branches(state, nid, keep=lambda e: e.source_handle != HANDLE_HITL)
    if ntype == "variable" and "name" in output:
        state.vars[str(output["name"])] = output.get("value")
    if ntype == "disableNode":
        target = graph.by_label.get(str(graph.data[nid].get("targetNodeLabel", "")))
        if target is not None:
            state.disabled.add(target)
    if ntype == "loop":
        _loop_completed(state, nid, output, event.metadata.get("loop"))
        return
    branch = output.get("branch")
    if ntype in ("condition", "switch") and isinstance(branch, str):
        _skip_branches(state, nid, keep=lambda e: e.source_handle in (None, branch))
    elif output.get("_errorBranch") is True:
        _skip_branches(state, nid, keep=lambda e: e.source_handle == HANDLE_ERROR)
    elif graph.data[nid].get("onErrorEnabled"):
        # Error-handle nodes run only on error (Heym also ran them on success: fixed).
        _skip_branches(state, nid, keep=lambda e: e.source_handle != HANDLE_ERROR)


def _skip_branches(state: RunState, nid: str, keep: Any) -> None:
    """Mark what only the inactive branches reach as skipped; shared nodes stay live."""
    edges = state.graph.out_edges.get(nid, [])
    live = state.graph.reachable(e.target for e in edges if keep(e))
    dead = state.graph.reachable(e.target for e in edges if not keep(e))
    state.skip_marks |= dead - live


def _fire_out_edges(state: RunState, nid: str, *, skipped: bool) -> None:
    graph = state.graph
    in_error_flow = nid in graph.error_flow
    edges = graph.error_out.get(nid, []) if in_error_flow else graph.out_edges.get(nid, [])
    ignored = state.ignored_handles.get(nid, set())
    for e in edges:
        if e.source_handle in ignored:
            continue
        if e.id in graph.loop_back:
            _loop_back(state, e, skipped=skipped)
            continue
        state.counts[e.target] = state.counts.get(e.target, 0) - 1


# -- loops --------------------------------------------------------------------------------------


def _loop_completed(
    state: RunState, nid: str, output: dict[str, Any], bookkeeping: dict[str, Any] | None
) -> None:
    graph = state.graph
    edges = graph.out_edges.get(nid, [])
    if output.get("branch") == HANDLE_DONE:
        done_side = graph.reachable(e.target for e in edges if e.source_handle == HANDLE_DONE)
        loop_side = graph.reachable(e.target for e in edges if e.source_handle == HANDLE_LOOP)
        # The done branch was skipped while iterating; it runs now, after a reset.
        _reset(state, done_side, running={nid})
        state.skip_marks |= loop_side - done_side
        state.skip_marks -= done_side - state.disabled
    else:
        done_side = graph.reachable(e.target for e in edges if e.source_handle == HANDLE_DONE)
        loop_side = graph.reachable(e.target for e in edges if e.source_handle == HANDLE_LOOP)
        state.skip_marks |= done_side - loop_side
    if isinstance(bookkeeping, dict):
        state.loops[nid] = LoopState(
            items=list(bookkeeping.get("items") or []),
            index=int(bookkeeping.get("index", 0)),
            total=int(bookkeeping.get("total", 0)),
            results=list(bookkeeping.get("results") or []),
            done=output.get("branch") == HANDLE_DONE,
        )
    state.rearmed.discard(nid)


def _loop_back(state: RunState, edge: Edge, *, skipped: bool) -> None:
    loop_id = edge.target
    loop = state.loops.get(loop_id)
    if loop is not None and loop.done:
        return
    if state.status.get(loop_id) not in DONE:
        if not skipped:  # a second loop-back in one iteration: keep a real input
            state.loop_back[loop_id] = state.outputs.get(edge.source)
        return
    state.loop_back[loop_id] = None if skipped else state.outputs.get(edge.source)
    body = set(state.graph.loop_bodies.get(loop_id, frozenset()))
    _reset(state, body, running={loop_id})
    state.skip_marks -= body - state.disabled
    state.status.pop(loop_id, None)
    state.rearmed.add(loop_id)
    state.counts[loop_id] = 0


def _reset(state: RunState, nodes: set[str], *, running: set[str]) -> None:
    """Forget the nodes' results so they run again; counts come back from their inputs."""
    graph = state.graph
    for n in nodes:
        state.status.pop(n, None)
        state.outputs.pop(n, None)
        state.attempts.pop(n, None)
        state.ignored_handles.pop(n, None)
    for n in nodes:
        state.counts[n] = sum(
            1
            for e in graph.gating_in[n]
            if e.source in nodes or e.source in running or state.status.get(e.source) not in DONE
        )
