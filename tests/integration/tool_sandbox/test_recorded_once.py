"""A redelivered work item whose result is already on the agent's aggregate is not run again
(the sandbox reads the aggregate first), over a real JetStream consumer and event log."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from contracts import subjects
from contracts.agents import ToolCallRecorded
from contracts.subjects import RUN_STREAM
from contracts.tools import SandboxToolDispatched
from libs.eventlog import EventLog, provision_run_stream
from libs.testing import infra
from libs.testing.eventually import eventually
from libs.tools.mcp_config import McpServer
from services.tool_sandbox.a2a_client import RemoteCall
from services.tool_sandbox.containment.policy import Limits
from services.tool_sandbox.executor import ToolExecutor
from services.tool_sandbox.fairness import FairScheduler
from services.tool_sandbox.mcp.client import McpClient
from services.tool_sandbox.processes import ProcessRunner
from services.tool_sandbox.python_tools import PythonToolRunner
from services.tool_sandbox.skills import SkillRunner
from services.tool_sandbox.work_items import ToolCalls

pytestmark = pytest.mark.integration


async def _none(owner: str, cid: str) -> McpServer | None:
    return None


async def _no_credential(run_id: str, item_id: str) -> str:
    return ""


def _calls(log: EventLog, processes: ProcessRunner, root: Path) -> ToolCalls:
    import httpx

    executor = ToolExecutor(
        skills=SkillRunner(processes, work_root=root, runner="python"),
        python_tools=PythonToolRunner(processes, work_root=root),
        mcp=McpClient(
            processes.containment,
            work_root=root,
            load_stored=_none,
            limits=Limits(),
            first_slot=300,
        ),
        http=httpx.AsyncClient(),
        publisher=lambda *_: None,  # type: ignore[arg-type,return-value]
        a2a=RemoteCall(httpx.AsyncHTTPTransport(), max_response_bytes=1 << 20),
        credentials=_no_credential,
    )
    return ToolCalls(
        log,
        executor,
        io=FairScheduler("io", limit=4, per_user=2),
        processes=FairScheduler("p", limit=2, per_user=1),
    )


@pytest.fixture
async def event_log(tmp_path: Path) -> AsyncIterator[EventLog]:
    """A NATS server of its own: a running tool sandbox (the e2e suite's) would take the item."""
    with infra.nats_server(tmp_path / "nats") as url:
        async with infra.connected(url) as nc:
            yield EventLog(nc)


@pytest.mark.parametrize("recorded_before", [True, False])
async def test_a_redelivered_call_runs_only_if_nothing_is_recorded(
    event_log: EventLog,
    run_id: str,
    processes: ProcessRunner,
    sandbox_dir: Path,
    recorded_before: bool,
) -> None:
    await provision_run_stream(event_log.nc)
    ev = SandboxToolDispatched(
        item_id=uuid.uuid4().hex,
        invocation_id="i1",
        tool_call_id="call_1",
        turn=1,
        name="answer",
        source="python",
        arguments=json.dumps({}),
        meta={"code": "def answer():\n    return 42"},
    )
    agent = subjects.agent(run_id, ev.invocation_id)
    if recorded_before:
        earlier = ToolCallRecorded(
            turn=1, tool_call_id="call_1", name="answer", source="python", arguments="{}",
            result="recorded earlier", status="success", started_at_ms=0, finished_at_ms=0,
            elapsed_ms=0.0,
        )  # fmt: skip
        await event_log.append(agent, [earlier], message_id=f"earlier-{run_id}")
    item = subjects.work_item(run_id, "tool_sandbox", ev.item_id)
    await event_log.append(item, [ev], expected_sequence=0)
    js = event_log.nc.jetstream()
    sub = await js.pull_subscribe(item, durable=f"t{uuid.uuid4().hex[:8]}", stream=RUN_STREAM)
    (msg,) = await sub.fetch(1, timeout=5)
    await msg.nak()
    (msg,) = await sub.fetch(1, timeout=5)  # the redelivery
    assert msg.metadata.num_delivered == 2
    calls = _calls(event_log, processes, sandbox_dir / "once")
    envelopes = event_log.envelopes(msg)
    await calls.on_items(envelopes, msg)
    slots = calls._processes
    await eventually(lambda: not slots.running_keys() and not slots.waiting, timeout=30)
    results = [
        e.event for e in await event_log.read(agent) if isinstance(e.event, ToolCallRecorded)
    ]
    if recorded_before:
        assert [r.result for r in results] == ["recorded earlier"]  # not run again
    else:
        assert [r.result for r in results] == [42]
