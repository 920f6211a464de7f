"""Tools that delegate: `call_sub_agent` (a sub-agent invocation) and `call_sub_workflow`
(a child run through the scheduler). Both are dispatched as events and awaited."""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from typing import Any

from contracts import subjects
from contracts.agents import SubAgentDispatched
from contracts.nodes import NodeCompleted
from contracts.runs import ParentLink, RunRequested
from contracts.workflows import MAX_SUB_WORKFLOW_DEPTH
from libs.eventlog import ConcurrencyConflict, EventLog
from services.agent_runtime.call import MAX_SUB_AGENT_DEPTH, AgentCall
from services.agent_runtime.tools.spec import ToolOutcome
from services.agent_runtime.waits import WaitTimeout, node_result, run_completed

DELEGATION_TIMEOUT_S = 900.0
_CHILD_NS = uuid.UUID("0f6c8d1e-8a53-4f1e-9b8e-3d7f6a2c4b91")


def sub_invocation_id(parent: str, tool_call_id: str) -> str:
    return f"{parent}s{hashlib.sha1(tool_call_id.encode()).hexdigest()[:10]}"


async def call_sub_agent(
    log: EventLog, call: AgentCall, tool_call_id: str, args: dict[str, Any]
) -> ToolOutcome:
    label = str(args.get("sub_agent_label", ""))
    prompt = str(args.get("prompt", ""))
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
    dispatch = SubAgentDispatched(
        invocation_id=invocation,
        parent_invocation_id=call.invocation_id,
        tool_call_id=tool_call_id,
        node_id=str(target.get("id")),
        node_label=label,
        prompt=prompt,
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
    )
    # Its own message, so another runtime replica can take it while this one waits.
    await log.append(
        subjects.run_decisions(call.run_id, "agent_runtime"),
        [dispatch],
        message_id=f"subagent-{call.run_id}-{invocation}",
        correlation_id=call.correlation_id,
        traceparent=call.traceparent,
    )
    try:
        result = await node_result(log, call.run_id, invocation, timeout=DELEGATION_TIMEOUT_S)
    except WaitTimeout:
        return ToolOutcome.error(f"sub-agent {label!r} did not finish in time", status="timeout")
    extra = {"sub_agent_label": label, "invocation_id": invocation}
    if isinstance(result, NodeCompleted) and result.status == "success":
        output = result.output if isinstance(result.output, dict) else {}
        return ToolOutcome(result={"text": output.get("text", "")}, extra=extra)
    error = result.error or "sub-agent failed"
    return ToolOutcome(result={"text": "", "error": error}, status="error", extra=extra)


def child_run_id(run_id: str, invocation_id: str, tool_call_id: str) -> str:
    return uuid.uuid5(_CHILD_NS, f"{run_id}:{invocation_id}:{tool_call_id}").hex


async def call_sub_workflow(
    log: EventLog, call: AgentCall, tool_call_id: str, args: dict[str, Any]
) -> ToolOutcome:
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
    request = RunRequested(
        workflow_id=snapshot.id,
        workflow_name=snapshot.name,
        owner_id=call.owner_id,
        nodes=snapshot.nodes,
        edges=snapshot.edges,
        inputs={"headers": {}, "query": {}, "body": body},
        trigger_source="AI Agents",
        parent=ParentLink(
            run_id=call.run_id,
            invocation_id=call.invocation_id,
            node_id=call.node_id,
            node_label=call.node_label,
            node_type=call.node_type,
            wait=False,  # the agent awaits the child itself; nothing is written to its aggregate
            via="agent",
        ),
        depth=call.run_depth + 1,
        workflow_cache=call.sub_workflows,
        timezone=call.timezone,
        traceparent=call.traceparent,
    )
    with contextlib.suppress(ConcurrencyConflict):  # started before a restart: wait for it
        await log.append(
            subjects.run_commands(child),
            [request],
            expected_sequence=0,
            message_id=f"start-{child}",
        )
    try:
        done = await run_completed(log, child, timeout=DELEGATION_TIMEOUT_S)
    except WaitTimeout:
        return ToolOutcome.error(
            f"sub-workflow {snapshot.name!r} did not finish in time", status="timeout"
        )
    result: dict[str, Any] = {
        "status": done.status,
        "outputs": done.outputs,
        "execution_time_ms": done.execution_time_ms,
    }
    extra = {"workflow_name": snapshot.name, "workflow_id": wid, "execution_id": child}
    if done.status != "success":
        result["error"] = done.error or (done.outputs or {}).get("error") or done.status
        return ToolOutcome(result=result, status="error", extra=extra)
    return ToolOutcome(result=result, extra=extra)
