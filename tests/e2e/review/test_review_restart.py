"""Full restart between the pause and the decision: `heym up` stopped (every service, NATS
and Postgres), started again on the same data directory, then the decision is posted: the run
resumes from its log and completes."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from libs.embedded.process import free_port
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import ModelServer
from tests.e2e.agents.helpers import create, model_credential
from tests.e2e.review.helpers import drafting_rules, review_workflow, script, token_of, wait_status
from tests.e2e.stack import heym_up, pid_alive

pytestmark = pytest.mark.e2e

API_KEY = "heym_e2e_" + uuid.uuid4().hex


async def test_decision_after_a_full_restart_resumes_the_run(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    ports = {"http_port": free_port(), "nats_port": free_port()}
    with ModelServer(script(*drafting_rules())) as model:
        async with HttpTarget() as target:
            async with heym_up(data_dir, API_KEY, **ports) as stack:
                async with httpx.AsyncClient(
                    base_url=stack.base_url, headers={"X-MCP-Key": API_KEY}, timeout=60
                ) as c:
                    cred = await model_credential(c, model)
                    nodes, edges = review_workflow(cred, f"{target.url}/echo/{uuid.uuid4().hex}")
                    wid = await create(c, nodes, edges)
                    r = await c.post(
                        f"/api/workflows/{wid}/execute",
                        json={"text": "go"},
                        headers={"X-Simple-Response": "false"},
                    )
                    assert r.status_code == 200, r.text
                    body = r.json()
                    assert body["status"] == "pending", body
                    run_id = body["execution_history_id"]
                    url = body["outputs"]["writer"]["reviewUrl"]
                    await wait_status(c, wid, run_id, {"pending"})
                first_pids = dict(stack.pids)
            # everything is down: every service, NATS and Postgres
            assert {n for n, pid in first_pids.items() if pid_alive(pid)} == set()
            assert [q.rule_name for q in model.chat_requests] == ["draft"]

            async with heym_up(data_dir, API_KEY, **ports) as stack:
                assert not set(stack.pids.values()) & set(first_pids.values())
                async with httpx.AsyncClient(
                    base_url=stack.base_url, headers={"X-MCP-Key": API_KEY}, timeout=60
                ) as c:
                    page = await c.get(f"/review/{token_of(url)}")
                    assert page.status_code == 200
                    decision = await c.post(
                        f"/api/hitl/{token_of(url)}/decision",
                        json={"action": "edit", "edited_text": "After the restart."},
                    )
                    assert decision.status_code == 202, decision.text
                    done = await wait_status(c, wid, run_id, {"success", "error"})
                    assert done["status"] == "success", done
                    writer = next(x for x in done["node_results"] if x["node_label"] == "writer")
                    assert writer["output"]["decision"] == "edited"
                    assert writer["output"]["approvedMarkdown"] == "After the restart."
    # the conversation continued: the draft was not asked again
    assert [q.rule_name for q in model.chat_requests] == ["draft", "after-review"]
