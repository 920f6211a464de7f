"""Heym's A2A server on the wire: the seed's curl example, refusals and their codes, bad input,
isolation between users and between servers, the cards."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from libs.testing.model_server import ModelServer, Reply, Rule, Script
from tests.e2e.a2a.helpers import VERSION, a2a_user, rpc
from tests.e2e.assistant.helpers import MODEL
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

SEED_BODY = (
    '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1",'
    '"role":"ROLE_USER","parts":[{"text":"List my workflows"}]}}}'
)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="You have 0 workflows."))])) as server:
        yield server


def error_of(body: dict[str, object]) -> tuple[int, str]:
    error = body["error"]
    assert isinstance(error, dict), body
    return int(error["code"]), str(error.get("data", [{}])[0].get("reason", ""))


async def test_seed_curl_example_verbatim_and_its_03_counterpart(
    system: System, model: ModelServer
) -> None:
    user = await a2a_user(system, model)
    async with system.client() as c:
        card = await c.get("/.well-known/agent-card.json")
        assert card.status_code == 200
        assert card.json()["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"
        assert card.headers["etag"]
        r = await c.post(
            "/api/a2a",
            content=SEED_BODY,
            headers={
                "X-MCP-Key": user.key,
                "A2A-Version": "1.0",
                "Content-Type": "application/json",
            },
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["jsonrpc"] == "2.0"
        assert body["id"] == 1
        task = body["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["status"]["timestamp"].endswith("Z")
        assert task["artifacts"] == [
            {
                "artifactId": "response",
                "name": "Heym Agent reply",
                "parts": [{"text": "You have 0 workflows."}],
            }
        ]
        old = json.loads(SEED_BODY)
        old["method"] = "message/send"
        old["params"]["message"] = {
            "messageId": "m1",
            "role": "user",
            "parts": [{"kind": "text", "text": "List my workflows"}],
        }
        r = await c.post("/api/a2a", json=old, headers={"X-MCP-Key": user.key})
        assert r.status_code == 200
        code, reason = error_of(r.json())
        assert (code, reason) == (-32009, "VERSION_NOT_SUPPORTED")
        assert "SendMessage" in r.json()["error"]["message"]
        # The 1.0 method without the version header is 0.3 too.
        r = await c.post(
            "/api/a2a",
            content=SEED_BODY,
            headers={"X-MCP-Key": user.key, "Content-Type": "application/json"},
        )
        assert error_of(r.json())[0] == -32009
        r = await c.post(
            "/api/a2a/",
            content=SEED_BODY,
            headers={
                "X-MCP-Key": user.key,
                "A2A-Version": "99.0",
                "Content-Type": "application/json",
            },
        )
        assert error_of(r.json())[0] == -32009


async def test_bad_input_is_a_clear_jsonrpc_error(system: System, model: ModelServer) -> None:
    user = await a2a_user(system, model)
    headers = {"X-MCP-Key": user.key, **VERSION}
    async with system.client() as c:
        r = await c.post(
            "/api/a2a",
            content=b"{not json",
            headers={**headers, "Content-Type": "application/json"},
        )
        assert r.status_code == 200
        assert r.json()["error"]["code"] == -32700
        assert r.json()["id"] is None
        r = await c.post(
            "/api/a2a", content=b"hello", headers={**headers, "Content-Type": "text/plain"}
        )
        assert error_of(r.json()) == (-32005, "CONTENT_TYPE_NOT_SUPPORTED")
        r = await c.post(
            "/api/a2a", json=[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}], headers=headers
        )
        assert error_of(r.json())[0] == -32600
        big = (
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"x":"'
            + b"a" * (10 * 1024 * 1024)
            + b'"}}'
        )
        r = await c.post(
            "/api/a2a", content=big, headers={**headers, "Content-Type": "application/json"}
        )
        assert r.status_code == 200
        assert error_of(r.json())[0] == -32600
        body = await rpc(c, "DoSomething", {}, headers={"X-MCP-Key": user.key})
        assert error_of(body) == (-32601, "METHOD_NOT_FOUND")
        body = await rpc(c, "GetTask", {"id": 42}, headers={"X-MCP-Key": user.key})
        assert error_of(body) == (-32602, "INVALID_PARAMS")
        body = await rpc(c, "ListTasks", {"page_size": "ten"}, headers={"X-MCP-Key": user.key})
        assert error_of(body)[0] == -32602
        body = await rpc(c, "ListTasks", {"pageSize": 1000}, headers={"X-MCP-Key": user.key})
        assert error_of(body)[0] == -32602
        body = await rpc(c, "SendMessage", {"message": "hi"}, headers={"X-MCP-Key": user.key})
        assert error_of(body)[0] == -32602
        file_part = {
            "message": {
                "messageId": "f1",
                "role": "ROLE_USER",
                "parts": [{"url": "https://x/y.pdf"}],
            }
        }
        body = await rpc(c, "SendMessage", file_part, headers={"X-MCP-Key": user.key})
        assert error_of(body)[0] == -32005
        long = {
            "message": {
                "messageId": "l1",
                "role": "ROLE_USER",
                "parts": [{"text": "x" * 15_000}, {"data": {"y": "z" * 6_000}}],
            }
        }
        body = await rpc(c, "SendMessage", long, headers={"X-MCP-Key": user.key})
        assert error_of(body)[0] == -32602
        assert "20,000" in body["error"]["message"]
        push = {"taskId": "t", "url": "https://example.com/hook"}
        body = await rpc(
            c, "CreateTaskPushNotificationConfig", push, headers={"X-MCP-Key": user.key}
        )
        assert error_of(body) == (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")
        body = await rpc(
            c, "GetTask", {"id": "nope"}, headers={"X-MCP-Key": user.key}, request_id="s-1"
        )
        assert error_of(body) == (-32001, "TASK_NOT_FOUND")
        assert body["id"] == "s-1"
        # snake_case params are read too
        body = await rpc(c, "ListTasks", {"page_size": 1}, headers={"X-MCP-Key": user.key})
        assert body["result"]["pageSize"] == 1
        # credentials only in headers; none at all is a 401 with a JSON-RPC body
        r = await c.post(
            "/api/a2a?key=" + user.key,
            content=SEED_BODY,
            headers={**VERSION, "Content-Type": "application/json"},
        )
        assert r.status_code == 400
        assert r.json()["error"]["code"] == -32000
        r = await c.post(
            "/api/a2a", content=SEED_BODY, headers={**VERSION, "Content-Type": "application/json"}
        )
        assert r.status_code == 401
        assert r.json()["error"]["code"] == -32000
    # The gateway is still fine.
    async with system.client(user.key) as c:
        assert (await c.get("/api/health")).status_code == 200


async def test_isolation_between_users_and_servers(system: System, model: ModelServer) -> None:
    alice = await a2a_user(system, model)
    bob = await a2a_user(system, model)
    async with system.client(alice.key) as c:
        sent = await rpc(c, "SendMessage", json.loads(SEED_BODY)["params"])
        task = sent["result"]["task"]
        r = await c.post("/api/mcp/servers", json={"name": "Shop"})
        assert r.status_code == 201, r.text
        server = r.json()
        r = await c.patch(
            f"/api/a2a/servers/{server['id']}/settings",
            json={"enabled": True, "credential_id": alice.credential_id, "model": MODEL},
        )
        assert r.status_code == 200, r.text
    async with system.client(bob.key) as c:
        body = await rpc(c, "GetTask", {"id": task["id"]})
        assert error_of(body)[0] == -32001
        listed = await rpc(c, "ListTasks", {})
        assert listed["result"]["tasks"] == []
        assert listed["result"]["totalSize"] == 0
        body = await rpc(c, "CancelTask", {"id": task["id"]})
        assert error_of(body)[0] == -32001
        msg = {
            "messageId": "b1",
            "role": "ROLE_USER",
            "parts": [{"text": "hi"}],
            "contextId": task["contextId"],
        }
        body = await rpc(c, "SendMessage", {"message": msg})
        assert error_of(body)[0] == -32602
    path = f"/api/a2a/servers/{server['id']}"
    async with system.client(server["key"]) as c:
        card = await c.get(f"{path}/agent-card.json")
        assert card.status_code == 200
        assert card.json()["supportedInterfaces"][0]["url"].endswith(path)
        body = await rpc(c, "GetTask", {"id": task["id"]}, path=path)
        assert error_of(body)[0] == -32001
        listed = await rpc(c, "ListTasks", {}, path=path)
        assert listed["result"]["tasks"] == []
        # the named server's key is not a key of the default server
        r = await c.post(
            "/api/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}, headers=VERSION
        )
        assert r.status_code == 401
        own = await rpc(c, "SendMessage", json.loads(SEED_BODY)["params"], path=path + "/")
        assert own["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        extended = await rpc(c, "GetExtendedAgentCard", {}, path=path)
        assert extended["result"]["name"] == "Heym Agent · Shop"
    async with system.client(alice.key) as c:
        listed = await rpc(c, "ListTasks", {})
        assert [t["id"] for t in listed["result"]["tasks"]] == [task["id"]]
        # the public card names no user, server or workflow
        card = (await c.get(f"{path}/agent-card.json")).json()
        assert "Shop" not in json.dumps(card)
        assert alice.user_id not in json.dumps(card)
        r = await c.patch(f"/api/a2a/servers/{server['id']}/settings", json={"enabled": False})
        assert r.status_code == 200
        assert (await c.get(f"{path}/agent-card.json")).status_code == 404
