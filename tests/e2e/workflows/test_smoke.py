"""Smoke: create a workflow over REST and run it."""

from __future__ import annotations

import pytest

from tests.e2e.system import System

pytestmark = pytest.mark.e2e


def n(nid: str, ntype: str, label: str, **data: object) -> dict[str, object]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label, **data},
    }


async def test_create_and_execute(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wf = {
            "name": "hello",
            "nodes": [
                n("in", "textInput", "userInput"),
                n("s", "set", "greet", mappings=[{"key": "msg", "value": "Hello $userInput.text"}]),
                n("o", "output", "result", message="$greet.msg"),
            ],
            "edges": [
                {"id": "e1", "source": "in", "target": "s"},
                {"id": "e2", "source": "s", "target": "o"},
            ],
        }
        r = await c.post("/api/workflows", json=wf)
        assert r.status_code == 201, r.text
        wid = r.json()["id"]
        r = await c.post(f"/api/workflows/{wid}/execute", json={"text": "Ada"})
        assert r.status_code == 200, r.text
        assert r.json() == {"result": {"result": "Hello Ada"}}
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "Bob"},
            headers={"X-Simple-Response": "false"},
        )
        body = r.json()
        assert body["status"] == "success"
        assert [x["node_label"] for x in body["node_results"]] == ["userInput", "greet", "result"]
