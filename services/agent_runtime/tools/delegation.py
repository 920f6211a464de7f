"""Tool calls that run elsewhere, as the one event that starts each: a sub-agent invocation
(`agent.sub_agent_dispatched`, the first event of its own aggregate), a child run
(`run.requested` through the scheduler, trigger source `AI Agents`) or a tool-sandbox work
item (`tool.dispatched`). Each child reports its end as an `agent.tool_result` on the
caller's aggregate; the caller holds nothing in memory meanwhile.

Ids are derived from the caller and the tool call, so a re-sent dispatch is the same event.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from contracts import subjects
from contracts.agents import SubAgentDispatched
from contracts.base import Event
from contracts.runs import ParentLink, RunRequested
from contracts.tools import SandboxToolDispatched
from contracts.workflows import MAX_SUB_WORKFLOW_DEPTH
from libs import telemetry
from services.agent_runtime.call import MAX_SUB_AGENT_DEPTH, AgentCall
from services.agent_runtime.tools.local import node_extra, overlay
from services.agent_runtime.tools.spec import ToolOutcome, ToolSpec

_CHILD_NS = uuid.UUID("0f6c8d1e-8a53-4f1e-9b8e-3d7f6a2c4b91")
SANDBOX_SOURCES = frozenset({"python", "skill", "mcp", "node_tool", "a2a"})

# subject, event, message id, target id (invocation, run or work item)
Target = tuple[str, Event, str, str]


def _digest(value: str, n: int = 10) -> str:
    return hashlib.sha1(value.encode()).hexdigest()[:n]


def sub_invocation_id(parent: str, tool_call_id: str) -> str:
    return f"{parent}s{_digest(tool_call_id)}"


def child_run_id(run_id: str, invocation_id: str, tool_call_id: str) -> str:
    return uuid.uuid5(_CHILD_NS, f"{run_id}:{invocation_id}:{tool_call_id}").hex


def work_item_id(invocation_id: str, tool_call_id: str) -> str:
    return f"{invocation_id}w{_digest(tool_call_id)}"


def dispatch_for(
    call: AgentCall,
    turn: int,
    tool_call_id: str,
    spec: ToolSpec,
    args: dict[str, Any],
    *,
    now_ms: int,
) -> ToolOutcome | Target:
    if spec.source == "sub_agent":
        return _sub_agent(call, turn, tool_call_id, args)
    if spec.source == "sub_workflow":
        return _sub_workflow(call, turn, tool_call_id, args, now_ms=now_ms)
    if spec.source in SANDBOX_SOURCES:
        return _sandbox(call, turn, tool_call_id, spec, args, now_ms=now_ms)
    return ToolOutcome.error(f"tool {spec.name!r} has no executor (source {spec.source!r})")


def _sub_agent(
    call: AgentCall, turn: int, tool_call_id: str, args: dict[str, Any]
) -> ToolOutcome | Target:
    label = str(args.get("sub_agent_label", ""))
    allowed = [str(x) for x in call.data.get("subAgentLabels") or []]
    if label not in allowed:
        return ToolOutcome.error(
            f"sub-agent {label!r} is not one of this orchestrator's: {allowed}"
        )
    nodes = call.workflow.nodes if call.workflow else []
    target = next(
        (
            n
            for n in nodes
            if n.get("type") == "agent" and (n.get("data") or {}).get("label") == label
        ),
        None,
    )
    if target is None:
        return ToolOutcome.error(f"no agent node labelled {label!r} in this workflow")
    if (target.get("data") or {}).get("active") is False:
        return ToolOutcome.error(f"sub-agent {label!r} is disabled")
    if call.agent_depth + 1 > MAX_SUB_AGENT_DEPTH:
        return ToolOutcome.error(
            f"sub-agent depth limit of {MAX_SUB_AGENT_DEPTH} reached: "
            f"{call.node_label!r} cannot call {label!r}"
        )
    invocation = sub_invocation_id(call.invocation_id, tool_call_id)
    event = SubAgentDispatched(
        invocation_id=invocation,
        parent_invocation_id=call.invocation_id,
        tool_call_id=tool_call_id,
        node_id=str(target.get("id")),
        node_label=label,
        prompt=str(args.get("prompt", "")),
        depth=call.agent_depth + 1,
        node=target,
        upstream=call.upstream,
        vars=call.vars,
        workflow_id=call.workflow_id,
        owner_id=call.owner_id,
        timezone=call.timezone,
        workflow=call.workflow,
        sub_workflows=call.sub_workflows,
        run_depth=call.run_depth,
        trigger_source=call.trigger_source,
        turn=turn,
        test_run=call.test_run,
        parent_node_id=call.node_id,
        parent_node_label=call.node_label,
        globals=call.globals,
        review_branch=call.review_branch,
    )
    subject = subjects.agent(call.run_id, invocation)
    return subject, event, f"subagent-{call.run_id}-{invocation}", invocation


def _sub_workflow(
    call: AgentCall, turn: int, tool_call_id: str, args: dict[str, Any], *, now_ms: int
) -> ToolOutcome | Target:
    wid = str(args.get("workflow_id", ""))
    allowed = [str(w) for w in call.data.get("subWorkflowIds") or []]
    if wid not in allowed:
        return ToolOutcome.error(f"workflow {wid!r} is not one this agent may call: {allowed}")
    snapshot = call.sub_workflows.get(wid)
    if snapshot is None:
        return ToolOutcome.error(f"workflow {wid!r} does not exist or is not yours")
    if call.run_depth + 1 > MAX_SUB_WORKFLOW_DEPTH:
        return ToolOutcome.error(f"sub-workflow depth limit of {MAX_SUB_WORKFLOW_DEPTH} reached")
    inputs = args.get("inputs")
    body: dict[str, Any] = dict(inputs) if isinstance(inputs, dict) else {"text": str(inputs or "")}
    for node in snapshot.nodes:
        if node.get("type") == "textInput":
            for f in (node.get("data") or {}).get("inputFields") or []:
                if (
                    isinstance(f, dict)
                    and f.get("key")
                    and f["key"] not in body
                    and "defaultValue" in f
                ):
                    body[str(f["key"])] = f["defaultValue"]
    child = child_run_id(call.run_id, call.invocation_id, tool_call_id)
    # The child run is a child of this tool call's span, in the agent's trace.
    tool_span = telemetry.header_of(
        telemetry.tool_context(call.trace, call.run_id, call.invocation_id, tool_call_id)
    )
    request = RunRequested(
        workflow_id=snapshot.id,
        workflow_name=snapshot.name,
        owner_id=call.owner_id,
        nodes=snapshot.nodes,
        edges=snapshot.edges,
        inputs={"headers": {}, "query": {}, "body": body},
        test_run=call.test_run,
        # a child sees its parent's globals overlaid with the parent's `$vars`, as Execute does
        globals={**call.globals, **call.vars},
        trigger_source="AI Agents",
        parent=ParentLink(
            run_id=call.run_id,
            invocation_id=call.invocation_id,
            node_id=call.node_id,
            node_label=call.node_label,
            node_type=call.node_type,
            wait=False,  # the scheduler's waits are for Execute nodes; the agent gets a record
            via="agent",
            tool_call_id=tool_call_id,
            turn=turn,
            tool_name="call_sub_workflow",
        ),
        depth=call.run_depth + 1,
        requested_at_ms=now_ms,
        workflow_cache=call.sub_workflows,
        timezone=call.timezone,
        traceparent=tool_span,
        run_traceparent=telemetry.header_of(telemetry.new_run_context(child, tool_span)),
        review_branch=call.review_branch,
    )
    return subjects.run_commands(child), request, f"start-{child}", child


def _sandbox(
    call: AgentCall,
    turn: int,
    tool_call_id: str,
    spec: ToolSpec,
    args: dict[str, Any],
    *,
    now_ms: int,
) -> Target:
    item = work_item_id(call.invocation_id, tool_call_id)
    meta = dict(spec.meta)
    name = spec.name
    if spec.source == "node_tool":
        node = spec.meta["node"]
        data = overlay(dict(node.get("data") or {}), args)
        meta = {
            "node": {**node, "data": data},
            "inputs": call.inputs,
            "upstream": call.upstream,
            "vars": call.vars,
            "globals": call.globals,
            **node_extra(node),
        }
    idem = hashlib.sha256(f"{call.run_id}:{item}".encode()).hexdigest()[:32]
    timeout = float(call.data.get("toolTimeoutSeconds") or 30)
    if spec.source == "a2a":  # a remote agent's own budget (its task may take minutes)
        timeout = float(spec.meta.get("agent", {}).get("timeoutSeconds") or timeout)
    event = SandboxToolDispatched(
        item_id=item,
        invocation_id=call.invocation_id,
        tool_call_id=tool_call_id,
        turn=turn,
        name=name,
        source=spec.source,  # type: ignore[arg-type]
        arguments=json.dumps(args),
        meta=meta,
        timeout_s=timeout,
        owner_id=call.owner_id,
        workflow_id=call.workflow_id,
        node_id=call.node_id,
        node_label=call.node_label,
        idempotency_key=idem,
        dispatched_at_ms=now_ms,
        timezone=call.timezone,
        test_run=call.test_run,
    )
    subject = subjects.work_item(call.run_id, "tool_sandbox", item)
    return subject, event, f"work-{call.run_id}-{item}", item
