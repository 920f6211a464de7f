"""A real trace backend, as users run one: Arize Phoenix (OTLP/HTTP ingest, storage, query
API) receives a run's spans from the services and serves them back with their tree and the
GenAI attributes. Heavy (Phoenix is about 850 MB), so `task test:backends` installs it into
`.venv-backends` and runs this; the default suite skips it."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from libs.embedded.process import free_port
from libs.testing.eventually import eventually
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System
from tests.e2e.tracing.conftest import otel_env, traced_system

VENV = os.environ.get("HEYM_TEST_BACKENDS", "")
pytestmark = [
    pytest.mark.backends,
    pytest.mark.skipif(not VENV, reason="run by `task test:backends` (installs Phoenix)"),
]


@contextlib.asynccontextmanager
async def phoenix(directory: Path) -> AsyncIterator[str]:
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_WORKING_DIR": str(directory),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (directory / "phoenix.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        str(Path(VENV) / "bin" / "phoenix"), "serve", env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client:

            async def up() -> bool:
                assert proc.returncode is None, (directory / "phoenix.log").read_text()[-3000:]
                with contextlib.suppress(httpx.HTTPError):
                    return (await client.get(f"{url}/healthz")).status_code == 200
                return False

            await eventually(up, timeout=90, interval=0.5, message="Phoenix started")
        yield url
    finally:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        log.close()


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


async def spans_in(url: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient() as client:
        r = await client.get(f"{url}/v1/projects/default/spans", params={"limit": 1000})
    assert r.status_code == 200, r.text
    return list(r.json()["data"])


async def test_phoenix_stores_a_runs_trace_with_its_tree_and_genai_attributes(
    pg_admin_url: str, pg_template: str, tmp_path: Path, model: ModelServer
) -> None:
    (tmp_path / "phoenix").mkdir()
    async with phoenix(tmp_path / "phoenix") as url:
        env = otel_env(url)
        async with traced_system(tmp_path / "heym", pg_admin_url, pg_template, env) as system:
            run_id = await run_agent_with_a_sub_workflow(system, model)

            async def stored() -> list[dict[str, Any]]:
                found = await spans_in(url)
                root = next(
                    (s for s in found if s["attributes"].get("heym.run.id") == run_id), None
                )
                assert root is not None, [s["name"] for s in found]
                trace = root["context"]["trace_id"]
                mine = [s for s in found if s["context"]["trace_id"] == trace]
                assert len(mine) >= 9, [s["name"] for s in mine]
                return mine

            spans = await eventually(stored, timeout=60, interval=0.5)
    by_id = {s["context"]["span_id"]: s for s in spans}
    root = next(s for s in spans if s["attributes"].get("heym.run.id") == run_id)
    assert root["name"] == "heym.workflow.execute"
    assert not root.get("parent_id")
    helper = next(s for s in spans if s["attributes"].get("heym.node.label") == "helper")
    assert helper["parent_id"] == root["context"]["span_id"]
    assert helper["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    tool = next(s for s in spans if s["name"] == "heym.agent.tool.execute")
    assert by_id[tool["parent_id"]] is helper
    assert tool["attributes"]["gen_ai.tool.name"] == "call_sub_workflow"
    assert tool["attributes"]["gen_ai.operation.name"] == "execute_tool"
    chats = [s for s in spans if s["name"].startswith("chat")]
    assert len(chats) == 2
    assert all(by_id[c["parent_id"]] is helper for c in chats)
    assert all(c["attributes"]["gen_ai.usage.input_tokens"] > 0 for c in chats)
    child = next(
        s
        for s in spans
        if s["name"] == "heym.workflow.execute" and s.get("parent_id") == tool["context"]["span_id"]
    )
    assert child["attributes"]["heym.sub_workflow.depth"] == 1


async def run_agent_with_a_sub_workflow(system: System, model: ModelServer) -> str:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        child = await create(
            c,
            [n("cin", "textInput", "childIn"), n("cs", "set", "childSet", mappings=[])],
            [e("cin", "cs")],
        )
        model.script = Script(
            rules=[
                Rule(
                    when=Match(tool_offered="call_sub_workflow", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall("call_sub_workflow", {"workflow_id": child, "inputs": {}})
                        ]
                    ),
                ),
                Rule(when=Match(tool_result_for="call_sub_workflow"), reply=Reply(text="done")),
            ]
        )
        wid = await create(
            c,
            [n("in", "textInput", "start"), agent("ag", "helper", cred, subWorkflowIds=[child])],
            [e("in", "ag")],
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={"X-Simple-Response": "false"},
        )
    assert r.status_code == 200, r.text
    return str(r.json()["execution_history_id"])
