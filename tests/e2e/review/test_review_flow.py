"""The seed's Human-in-the-Loop flow over REST with the scripted model: the agent drafts and
asks for review, the notification branch runs with the review link, the run is `pending`;
accept, edit and refuse each resume it by replay, and the outputs follow the decision."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from libs.testing.http_target import HttpTarget
from libs.testing.model_server import ModelServer, Reply, Rule
from tests.e2e.agents.helpers import create, model_credential
from tests.e2e.review.helpers import (
    DRAFT,
    SUMMARY,
    drafting_rules,
    review_workflow,
    script,
    token_of,
    wait_status,
)
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(script(*drafting_rules())) as server:
        yield server


async def _paused_run(
    system: System, model: ModelServer, target: HttpTarget
) -> tuple[Any, str, str, dict[str, Any], str]:
    _, key = await system.new_user()
    c = system.client(key)
    cred = await model_credential(c, model)
    path = f"/echo/notify-{uuid.uuid4().hex}"
    nodes, edges = review_workflow(cred, target.url + path)
    wid = await create(c, nodes, edges)
    r = await c.post(
        f"/api/workflows/{wid}/execute",
        json={"text": "announce the launch"},
        headers={"X-Simple-Response": "false"},
    )
    assert r.status_code == 200, r.text
    return c, wid, r.json()["execution_history_id"], r.json(), path


@pytest.mark.parametrize("action", ["accept", "edit", "refuse"])
async def test_pause_then_decision_resumes_by_replay(
    system: System, model: ModelServer, action: str
) -> None:
    async with HttpTarget() as target:
        c, wid, run_id, body, path = await _paused_run(system, model, target)
        async with contextlib.aclosing(c):
            # Paused: status pending, the pending payload as the agent's output.
            assert body["status"] == "pending", body
            pending = body["outputs"]["writer"]
            assert pending["decision"] is None
            assert pending["summary"] == SUMMARY
            assert pending["draftText"] == DRAFT
            assert pending["reviewUrl"].startswith(system.base_url + "/review/")
            assert pending["shareMarkdown"].endswith(f"[Open review page]({pending['reviewUrl']})")
            assert pending["requestId"]
            assert pending["expiresAt"]
            rows = {r["node_label"]: r for r in body["node_results"]}
            assert rows["writer"]["status"] == "pending"
            assert "answer" not in rows  # nothing on the main path after the agent
            # The notification branch ran with the review link, once.
            (notified,) = [q for q in target.requests if q["path"] == path]
            assert json.loads(notified["body"])["url"] == pending["reviewUrl"]
            entry = await wait_status(c, wid, run_id, {"pending"})
            assert entry["outputs"]["writer"]["reviewUrl"] == pending["reviewUrl"]

            token = token_of(pending["reviewUrl"])
            view = await c.get(f"/api/hitl/{token}")
            assert view.status_code == 200, view.text
            assert view.json()["original_draft_text"] == DRAFT
            decision: dict[str, Any] = {"action": action}
            if action == "edit":
                decision["edited_text"] = "Hello team, we launch on **Tuesday**."
            if action == "refuse":
                decision["refusal_reason"] = "not yet"
            r = await c.post(f"/api/hitl/{token}/decision", json=decision)
            assert r.status_code == 202, r.text
            assert r.json() == {"request_id": pending["requestId"], "status": "resolved"}

            done = await wait_status(c, wid, run_id, {"success", "error"})
            assert done["status"] == "success", done
            writer = next(x for x in done["node_results"] if x["node_label"] == "writer")
            out = writer["output"]
            answer = done["outputs"]["answer"]["result"]
            expected = {"accept": "accepted", "edit": "edited", "refuse": "refused"}[action]
            assert out["decision"] == expected
            assert out["requestId"] == pending["requestId"]
            assert [h["decision"] for h in out["hitlHistory"]] == [expected]
            if action == "refuse":
                assert out["text"] == ""
                assert answer == ""
                assert out["refusalReason"] == "not yet"
                assert len(model.chat_requests) == 1  # ended at once, no model call
            else:
                approved = decision.get("edited_text", DRAFT)
                # The model received the approved text as the source of truth.
                assert json.loads(answer.removeprefix("FINAL "))["approved_markdown"] == approved
                assert out["approvedMarkdown"] == approved
                requests = model.chat_requests
                assert [q.rule_name for q in requests] == ["draft", "after-review"]
                # The conversation went on: the first request is a prefix of the second.
                first, second = requests[0].body["messages"], requests[1].body["messages"]
                assert second[: len(first)] == first
                assert second[len(first)]["tool_calls"][0]["function"]["name"] == (
                    "request_human_review"
                )
            # The review branch never ran again after the resume.
            assert [q["path"] for q in target.requests].count(path) == 1
            statuses = [x["status"] for x in done["node_results"] if x["node_label"] == "notify"]
            assert statuses == ["success"]


async def test_review_branch_is_skipped_when_the_agent_needs_no_review(system: System) -> None:
    """Heym ran the review branch whenever a HITL agent finished (quirk 2): here it runs only
    at a pause, so a run that needed no review sends no notification."""
    with ModelServer(script(Rule(reply=Reply(text="nothing to review")))) as model:
        async with HttpTarget() as target:
            c, _wid, _run_id, body, path = await _paused_run(system, model, target)
            async with contextlib.aclosing(c):
                assert body["status"] == "success", body
                assert body["outputs"]["answer"]["result"] == "nothing to review"
                rows = {r["node_label"]: r["status"] for r in body["node_results"]}
                assert rows["notify"] == "skipped"
                assert [q for q in target.requests if q["path"] == path] == []


async def test_sse_ends_pending_and_the_history_stream_follows_to_the_end(
    system: System, model: ModelServer
) -> None:
    """The execute stream ends with `execution_complete` status `pending` and the history
    entry id; the entry's stream follows it through the decision until it is done."""
    _, key = await system.new_user()
    async with HttpTarget() as target, system.client(key) as c:
        cred = await model_credential(c, model)
        nodes, edges = review_workflow(cred, f"{target.url}/echo/{uuid.uuid4().hex}")
        wid = await create(c, nodes, edges, sse_enabled=True)
        frames = []
        async with c.stream(
            "POST", f"/api/workflows/{wid}/execute/stream", json={"text": "go"}
        ) as r:
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))
        last = frames[-1]
        assert last["type"] == "execution_complete"
        assert last["status"] == "pending"
        run_id = last["execution_history_id"]
        url = last["outputs"]["writer"]["reviewUrl"]

        updates: list[dict[str, Any]] = []
        first = asyncio.Event()

        async def follow() -> None:
            async with c.stream("GET", f"/api/workflows/{wid}/history/{run_id}/stream") as s:
                async for line in s.aiter_lines():
                    if line.startswith("data:"):
                        updates.append(json.loads(line[5:]))
                        first.set()
                        if updates[-1]["type"] == "done":
                            return

        await wait_status(c, wid, run_id, {"pending"})  # projected: the stream starts there
        follower = asyncio.create_task(follow())
        await asyncio.wait_for(first.wait(), 30)
        r = await c.post(f"/api/hitl/{token_of(url)}/decision", json={"action": "accept"})
        assert r.status_code == 202
        await asyncio.wait_for(follower, 60)
        statuses = [u["entry"]["status"] for u in updates if u["type"] == "history_update"]
        assert statuses[0] == "pending"
        assert statuses[-1] == "success"
        assert updates[-1] == {"type": "done"}
