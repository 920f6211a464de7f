"""An agent on a paused agent's review branch passes the flag to whatever it starts: the
sub-agent invocation and the child run carry `review_branch`, so no agent beneath it pauses."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.agents import SubAgentDispatched
from contracts.runs import RunRequested, WorkflowSnapshot
from services.agent_runtime.call import AgentCall
from services.agent_runtime.tools.delegation import dispatch_for
from services.agent_runtime.tools.spec import ToolSpec

pytestmark = pytest.mark.unit

HELPER = {"id": "h", "type": "agent", "data": {"label": "helper"}}


def _call(review_branch: bool) -> AgentCall:
    boss = {
        "id": "b",
        "type": "agent",
        "data": {"label": "boss", "subAgentLabels": ["helper"], "subWorkflowIds": ["child"]},
    }
    return AgentCall(
        run_id="r1",
        invocation_id="i1",
        node_id="b",
        node_label="boss",
        node_type="agent",
        node=boss,
        inputs={},
        upstream={},
        vars={},
        owner_id="u1",
        workflow_id="w1",
        workflow=WorkflowSnapshot(id="w1", nodes=[boss, HELPER]),
        sub_workflows={"child": WorkflowSnapshot(id="child")},
        attempt=1,
        dispatched_at_ms=1,
        review_branch=review_branch,
    )


def _started(call: AgentCall, source: str, args: dict[str, Any]) -> Any:
    spec = ToolSpec(name=f"call_{source}", source=source, description="", parameters={})
    target = dispatch_for(call, 1, "t1", spec, args, now_ms=1)
    assert isinstance(target, tuple), target
    return target[1]


@pytest.mark.parametrize("review_branch", [True, False])
def test_the_flag_travels_to_sub_agents_and_child_runs(review_branch: bool) -> None:
    call = _call(review_branch)
    sub = _started(call, "sub_agent", {"sub_agent_label": "helper", "prompt": "p"})
    assert isinstance(sub, SubAgentDispatched)
    assert sub.review_branch is review_branch
    assert (
        AgentCall.from_request("r1", sub, requested_at_ms=1, traceparent=None).review_branch
        is review_branch
    )
    child = _started(call, "sub_workflow", {"workflow_id": "child", "inputs": {}})
    assert isinstance(child, RunRequested)
    assert child.review_branch is review_branch
