"""The scheduler answers `$credentials` requests only for a running tool-sandbox invocation:
anyone else on NATS asking for a run's, or a finished node's, credentials gets an error."""

from __future__ import annotations

import uuid

import msgspec
import nats
import pytest

from contracts.credentials import NODE_CREDENTIALS, NodeCredentialsReply, NodeCredentialsRequest
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


async def ask(system: System, run_id: str, invocation_id: str) -> NodeCredentialsReply:
    nc = await nats.connect(system.nats_url)
    try:
        request = NodeCredentialsRequest(run_id=run_id, invocation_id=invocation_id)
        msg = await nc.request(NODE_CREDENTIALS, msgspec.json.encode(request), timeout=5)
    finally:
        await nc.close()
    return msgspec.json.decode(msg.data, type=NodeCredentialsReply)


async def test_credentials_are_refused_outside_a_running_sandbox_node(system: System) -> None:
    _, key = await system.new_user()
    secret = "sk-broker-" + uuid.uuid4().hex
    async with system.client(key) as c:
        r = await c.post(
            "/api/credentials",
            json={"name": "svc", "type": "custom", "base_url": "http://x", "api_key": secret},
        )
        assert r.status_code == 201, r.text
        wf = {
            "name": "uses a secret",
            "nodes": [
                {"id": "in", "type": "textInput", "data": {"label": "req"}},
                {
                    "id": "h",
                    "type": "http",
                    "data": {
                        "label": "call",
                        "curl": "curl -H 'X: $credentials.svc' http://127.0.0.1:9/",
                    },
                },
            ],
            "edges": [{"id": "e", "source": "in", "target": "h"}],
        }
        wid = (await c.post("/api/workflows", json=wf)).json()["id"]
        run = await c.post(
            f"/api/workflows/{wid}/execute", json={}, headers={"X-Simple-Response": "false"}
        )
        assert run.status_code == 200, run.text
        body = run.json()
    assert secret not in run.text
    (call,) = [r for r in body["node_results"] if r["node_label"] == "call"]
    finished = await ask(system, body["execution_history_id"], call["metadata"]["invocation_id"])
    assert finished.values == {}
    assert finished.error == "no such running invocation in the tool sandbox"
    unknown = await ask(system, uuid.uuid4().hex, "i1")
    assert unknown.values == {}
    assert unknown.error is not None
    malformed = await ask(system, "not a run.>", "i1")
    assert malformed.values == {}
    assert malformed.error is not None
