"""The documented example consumer (`docs/examples/run_lifecycle.py`) follows every run's
lifecycle with a durable consumer of its own and resumes where it stopped after a restart;
the AsyncAPI document describes every channel it and others may read."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import nats
import pytest

from tests.e2e.system import System

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "examples" / "run_lifecycle.py"


async def follow(system: System, durable: str, lines: int) -> list[dict[str, Any]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        "--nats",
        system.nats_url,
        "--durable",
        durable,
        "--max",
        str(lines),
        stdout=asyncio.subprocess.PIPE,
        env={"PYTHONPATH": str(SCRIPT.parents[2])},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    return [json.loads(line) for line in out.decode().splitlines()]


async def started(system: System, durable: str) -> asyncio.Task[list[dict[str, Any]]]:
    """Start the example and wait until its durable consumer exists."""
    task = asyncio.create_task(follow(system, durable, 6))
    nc = await nats.connect(system.nats_url)
    try:
        for _ in range(200):
            try:
                await nc.jetstream().consumer_info("HEYM_RUNS", durable)
                return task
            except Exception:
                await asyncio.sleep(0.05)
    finally:
        await nc.close()
    raise AssertionError("the example never created its consumer")


async def run_once(system: System, key: str, wid: str) -> str:
    async with system.client(key) as c:
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "hi"},
            headers={"X-Simple-Response": "false"},
        )
    assert r.status_code == 200, r.text
    return str(r.json()["execution_history_id"])


async def test_example_consumer_follows_runs_and_resumes_after_a_restart(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        r = await c.post(
            "/api/workflows",
            json={
                "name": "followed",
                "nodes": [
                    {"id": "in", "type": "textInput", "data": {"label": "req"}},
                    {"id": "o", "type": "output", "data": {"label": "out", "message": "ok"}},
                ],
                "edges": [{"id": "e", "source": "in", "target": "o"}],
            },
        )
        wid = r.json()["id"]
    durable = f"example-{uuid.uuid4().hex[:8]}"
    first = await started(system, durable)
    runs = [await run_once(system, key, wid), await run_once(system, key, wid)]
    seen = await first
    ours = [x for x in seen if x["run_id"] in runs]
    assert [(x["run_id"], x["event"]) for x in ours] == [
        (run, event) for run in runs for event in ("requested", "started", "completed")
    ]
    assert {x["status"] for x in ours if x["event"] == "completed"} == {"success"}

    # stopped: a run happens meanwhile; the restarted consumer resumes with it, and only it
    third = await run_once(system, key, wid)
    again = await follow(system, durable, 3)
    assert {x["run_id"] for x in again} & set(runs) == set()
    assert [(x["run_id"], x["event"]) for x in again if x["run_id"] == third] == [
        (third, "requested"),
        (third, "started"),
        (third, "completed"),
    ]


async def test_asyncapi_documents_every_channel(system: System) -> None:
    async with system.client() as c:
        doc = (await c.get("/asyncapi.json")).json()
    addresses = {ch["address"] for ch in doc["channels"].values()}
    assert {
        "heym.run.*.cmd",
        "heym.run.*.sched.*",
        "heym.run.*.node.*",
        "heym.run.*.timer",
        "heym.agent.*.*",
        "heym.work.*.*.*",
        "heym.memory.*.*",
    } <= addresses
    schemas = doc["components"]["schemas"]
    for name in (
        "AgentRequested",
        "LlmCallRecorded",
        "AgentFinished",
        "SandboxToolDispatched",
        "GuardrailChecked",
        "MemoryEntityUpserted",
        "MemoryExtractionRequested",
    ):
        assert name in schemas
