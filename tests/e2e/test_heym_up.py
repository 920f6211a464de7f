"""`heym up` end to end: health over HTTP, restart of a dead service, poison messages,
a clean Ctrl-C, and a second start that finds the first one's data."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import uuid
from pathlib import Path

import httpx
import nats
import pytest
from nats.js.api import ConsumerInfo

from contracts import subjects
from contracts.runs import RunStarted
from libs.devstack.status import health_replies
from libs.eventlog import EventLog
from libs.eventlog.feeds import FeedSpec
from libs.testing.eventually import eventually
from tests.e2e.stack import heym_up, pid_alive

pytestmark = pytest.mark.e2e

API_KEY = "heym_e2e_" + uuid.uuid4().hex


async def healthy(base_url: str) -> dict[str, object]:
    async with httpx.AsyncClient() as client:
        r = await client.get(f"{base_url}/api/health", timeout=5)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ok"
    assert {name: s["state"] for name, s in body["services"].items()} == {
        name: "healthy" for name in subjects.SERVICES
    }
    return body


async def consumer(nc: nats.NATS, durable: str) -> ConsumerInfo:
    return await nc.jetstream().consumer_info(subjects.RUN_STREAM, durable)


async def partition_consumers(nc: nats.NATS, durable: str) -> list[ConsumerInfo]:
    spec = FeedSpec(durable, subjects.RUN_KEYED, 16)
    js = nc.jetstream()
    return [await js.consumer_info(spec.stream, spec.consumer(p)) for p in range(16)]


async def test_heym_up_runs_restarts_and_stops_cleanly(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    run_id = uuid.uuid4().hex
    async with heym_up(data_dir, API_KEY) as stack:
        body = await healthy(stack.base_url)
        # the main job: the example workflow ran and answered
        assert any(
            "Example workflow 'Hello Heym' ran (success)" in line and "Hello, world!" in line
            for line in stack.output
        ), stack.output
        assert len(body["services"]) == 5  # type: ignore[arg-type]
        assert set(stack.pids) == {"nats", "postgres", "model-server", *subjects.SERVICES}
        assert any("no model credential configured" in line for line in stack.output)
        assert any(
            line.startswith("traces") and "off (set HEYM_OTEL_ENABLED=true" in line
            for line in stack.output
        ), stack.output
        # the status table says how the tool sandbox contains what it runs
        (sandbox_row,) = [line for line in stack.output if line.startswith("tool_sandbox ")]
        expected = "sandbox: bubblewrap" if shutil.which("bwrap") else "sandbox: rlimits only"
        assert expected in sandbox_row, sandbox_row
        # no bare values in the table (tracing's "off, 0, 0" is the traces row's business)
        (scheduler_row,) = [line for line in stack.output if line.startswith("scheduler ")]
        state = scheduler_row.split(" healthy", 1)[1]
        items = [i.strip() for i in state.split(", ") if i.strip()]
        assert all(" " in i or ":" in i for i in items), scheduler_row  # each item named
        # with no model credential of its own, the admin gets the offline demo model
        async with httpx.AsyncClient(base_url=stack.base_url, headers={"X-MCP-Key": API_KEY}) as c:
            creds = (await c.get("/api/credentials")).json()
            (demo,) = [x for x in creds if x["name"] == "Offline demo model"]
            wf = {
                "name": "ask",
                "nodes": [
                    {"id": "in", "type": "textInput", "data": {"label": "q"}},
                    {
                        "id": "l",
                        "type": "llm",
                        "data": {"label": "ask", "credentialId": demo["id"], "model": "demo"},
                    },
                ],
                "edges": [{"id": "e", "source": "in", "target": "l"}],
            }
            wid = (await c.post("/api/workflows", json=wf)).json()["id"]
            answer = (await c.post(f"/api/workflows/{wid}/execute", json={"text": "hello"})).json()
            assert answer["ask"]["text"]

        nc = await nats.connect(stack.nats_url)
        try:
            # Poison: bytes that are no event batch, on every worker's work subject and on the
            # scheduler's feed. Each is rejected once (terminated), never redelivered.
            js = nc.jetstream()
            for service in ("agent_runtime", "tool_sandbox"):
                await js.publish(subjects.run_decisions(run_id, service), b"\x00 not json")
            # the review service's work is review requests (work items), not decisions
            await js.publish(subjects.work_item(run_id, "review", "r1"), b"\x00 not json")
            await js.publish(subjects.run_commands(run_id), b'{"type": "oops"}')

            async def all_rejected() -> bool:
                for durable in ("agent_runtime-work", "tool_sandbox-work", "review-reviews"):
                    info = await consumer(nc, durable)
                    assert info.num_ack_pending == 0, (durable, info)
                    assert info.num_redelivered == 0, (durable, info)
                    assert info.delivered.stream_seq >= 1, (durable, info)
                # the scheduler's feed is partitioned: one consumer per partition
                parts = await partition_consumers(nc, "scheduler-runs")
                assert all(i.num_ack_pending == 0 for i in parts), parts
                assert all(i.num_redelivered == 0 for i in parts), parts
                assert any(i.delivered.stream_seq >= 1 for i in parts), parts
                return True

            await eventually(all_rejected, timeout=15, message="poison messages rejected")
            await healthy(stack.base_url)
            for service in ("agent_runtime", "tool_sandbox", "review", "scheduler"):
                log = (data_dir / "logs" / f"{service}.log").read_text()
                assert "rejects a malformed message" in log, service

            # an acknowledged event, to be found by the next start
            await EventLog(nc).append(
                subjects.node(run_id, "n1"), [RunStarted(workflow_id="persisted", started_at_ms=1)]
            )
        finally:
            await nc.close()

        # a service that dies is reported and restarted
        killed = stack.pids["scheduler"]
        os.kill(killed, signal.SIGKILL)
        line = await stack.lines_until("scheduler restarted", timeout=30)
        found = re.search(r"pid (\d+)", line)
        assert found, line
        stack.pids["scheduler"] = int(found.group(1))
        assert stack.pids["scheduler"] != killed
        await eventually(lambda: healthy(stack.base_url), timeout=30, message="healthy again")
        stack.process.send_signal(signal.SIGINT)
        await stack.lines_until("Heym stopped.", timeout=60)
        assert await asyncio.wait_for(stack.process.wait(), 30) == 0
        pids = dict(stack.pids)

    # every process of the stack is gone, the restarted scheduler included
    assert set(pids) == {"nats", "postgres", "model-server", *subjects.SERVICES}
    leftovers = {name: pid for name, pid in pids.items() if pid_alive(pid)}
    assert not leftovers, f"processes left behind after Ctrl-C: {leftovers}"

    # The second start finds the first one's data: the event log and the admin's API key.
    async with heym_up(data_dir, API_KEY) as stack:
        await healthy(stack.base_url)
        assert not any("Created the admin user" in line for line in stack.output)
        nc = await nats.connect(stack.nats_url)
        try:
            events = await EventLog(nc).replay(run_id)
        finally:
            await nc.close()
        assert [e.event for e in events] == [RunStarted(workflow_id="persisted", started_at_ms=1)]


async def test_heym_up_on_a_nats_cluster_with_scheduler_replicas(tmp_path: Path) -> None:
    """`heym up --nats-cluster 3 --replicas scheduler=3`: three nats-servers as one JetStream
    cluster (run stream R3), three schedulers sharing the runs by partition, the example runs."""
    args = ("--nats-cluster", "3", "--replicas", "scheduler=3")
    async with heym_up(tmp_path / "data", API_KEY, args=args) as stack:
        await healthy(stack.base_url)
        assert any(
            "Example workflow 'Hello Heym' ran (success)" in line and "Hello, world!" in line
            for line in stack.output
        ), stack.output
        processes = {"postgres", "model-server", *subjects.SERVICES}
        processes |= {"nats (heym-1)", "nats (heym-2)", "nats (heym-3)"}
        processes |= {"scheduler#2", "scheduler#3"}
        assert set(stack.pids) == processes, stack.output
        nats_rows = [line for line in stack.output if line.startswith("nats (heym-")]
        assert all("run stream R3" in row for row in nats_rows), nats_rows
        urls = [line.split()[3] for line in nats_rows]
        nc = await nats.connect(servers=urls)
        try:
            info = await nc.jetstream().stream_info(subjects.RUN_STREAM)
            assert info.config.num_replicas == 3
            assert info.cluster is not None
            assert len(info.cluster.replicas or []) == 2
            # every scheduler replica answers
            found = await health_replies(nc, "scheduler")
            assert {stack.pids[n] for n in ("scheduler", "scheduler#2", "scheduler#3")} <= set(
                found
            )
        finally:
            await nc.close()
        # a run through the REST API on the cluster
        async with httpx.AsyncClient(base_url=stack.base_url, headers={"X-MCP-Key": API_KEY}) as c:
            workflows = (await c.get("/api/workflows")).json()
            example = next(w for w in workflows if w["name"] == "Hello Heym")
            for text in ("one", "two", "three"):
                r = await c.post(f"/api/workflows/{example['id']}/execute", json={"text": text})
                assert r.status_code == 200, r.text
                assert text in r.text
