"""Bad input at the review endpoints: unknown, used and expired tokens, two decisions posted
at once, an oversized or empty edit, and a decision for a run cancelled meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from contracts.review import ReviewDecided
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import ModelServer
from tests.e2e.agents.helpers import create, model_credential
from tests.e2e.review.helpers import drafting_rules, review_workflow, script, token_of, wait_status
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(script(*drafting_rules())) as server:
        yield server


@dataclass
class Paused:
    c: httpx.AsyncClient
    wid: str
    run_id: str
    token: str
    payload: dict[str, Any]


@contextlib.asynccontextmanager
async def paused_run(
    system: System, model: ModelServer, **agent_data: Any
) -> AsyncIterator[Paused]:
    _, key = await system.new_user()
    async with HttpTarget() as target, system.client(key) as c:
        cred = await model_credential(c, model)
        nodes, edges = review_workflow(cred, f"{target.url}/echo/{uuid.uuid4().hex}", **agent_data)
        wid = await create(c, nodes, edges)
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={"X-Simple-Response": "false"},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["status"] == "pending", body
        payload = body["outputs"]["writer"]
        yield Paused(c, wid, body["execution_history_id"], token_of(payload["reviewUrl"]), payload)


async def test_unknown_token_is_404_everywhere(system: System) -> None:
    async with system.client() as c:
        fake = "x" * 43
        assert (await c.get(f"/api/hitl/{fake}")).status_code == 404
        r = await c.post(f"/api/hitl/{fake}/decision", json={"action": "accept"})
        assert r.status_code == 404
        page = await c.get(f"/review/{fake}")
        assert page.status_code == 404
        assert "not valid" in page.text


async def test_used_token_409_and_410(system: System, model: ModelServer) -> None:
    async with paused_run(system, model) as p:
        r = await p.c.post(f"/api/hitl/{p.token}/decision", json={"action": "accept"})
        assert r.status_code == 202
        again = await p.c.post(f"/api/hitl/{p.token}/decision", json={"action": "refuse"})
        assert again.status_code == 409, again.text
        await wait_status(p.c, p.wid, p.run_id, {"success"})
        view = await p.c.get(f"/api/hitl/{p.token}")
        assert view.status_code == 410
        assert view.json()["decision"] == "accepted"
        page = await p.c.get(f"/review/{p.token}")
        assert page.status_code == 410
        assert "already decided" in page.text


async def test_decisions_posted_at_once_exactly_one_wins(
    system: System, model: ModelServer
) -> None:
    async with paused_run(system, model) as p:
        url = f"/api/hitl/{p.token}/decision"
        bodies = [
            {"action": "accept"},
            {"action": "edit", "edited_text": "other text"},
            {"action": "refuse"},
        ] * 4
        answers = await asyncio.gather(*(p.c.post(url, json=b) for b in bodies))
        codes = sorted(a.status_code for a in answers)
        assert codes == [202] + [409] * (len(bodies) - 1), [a.text for a in answers]
        done = await wait_status(p.c, p.wid, p.run_id, {"success", "error"})
        writer = next(x for x in done["node_results"] if x["node_label"] == "writer")
        winner = bodies[[a.status_code for a in answers].index(202)]
        decided = {"accept": "accepted", "edit": "edited", "refuse": "refused"}[winner["action"]]
        assert writer["output"]["decision"] == decided
        # exactly one decision is on the log, and the agent resumed once
        recorded = [
            env.event
            for env in await system.events(p.run_id)
            if isinstance(env.event, ReviewDecided)
        ]
        assert len(recorded) == 1
        assert [q.rule_name for q in model.chat_requests].count("after-review") <= 1
        assert [q.rule_name for q in model.chat_requests].count("draft") == 1


async def test_edit_must_be_non_empty_and_at_most_100k(system: System, model: ModelServer) -> None:
    async with paused_run(system, model) as p:
        url = f"/api/hitl/{p.token}/decision"
        for body in (
            {"action": "edit"},
            {"action": "edit", "edited_text": "   "},
            {"action": "edit", "edited_text": "x" * 100_001},
            {"action": "maybe"},
            {"action": "edit", "edited_text": 5},
        ):
            r = await p.c.post(url, json=body)
            assert r.status_code == 422, (body, r.text)
        # still open: a valid edit of exactly 100,000 characters is taken
        ok = await p.c.post(url, json={"action": "edit", "edited_text": "y" * 100_000})
        assert ok.status_code == 202, ok.text


async def test_decision_for_a_cancelled_run_is_410(system: System, model: ModelServer) -> None:
    async with paused_run(system, model) as p:
        r = await p.c.post(f"/api/workflows/{p.wid}/executions/{p.run_id}/cancel")
        assert r.status_code == 200, r.text
        decision = await p.c.post(f"/api/hitl/{p.token}/decision", json={"action": "accept"})
        assert decision.status_code == 410, decision.text
        done = await wait_status(p.c, p.wid, p.run_id, {"cancelled", "success", "error"})
        assert done["status"] == "cancelled"
        assert (await p.c.get(f"/api/hitl/{p.token}")).status_code == 410
        assert [q.rule_name for q in model.chat_requests] == ["draft"]  # nothing resumed


async def test_expired_review_fails_the_node(system: System, model: ModelServer) -> None:
    # 0.0005 h = 1.8 s: the expiry is a scheduled message on the log
    async with paused_run(system, model, hitlTimeoutHours=0.0005) as p:
        done = await wait_status(p.c, p.wid, p.run_id, {"error", "success"}, timeout=30)
        assert done["status"] == "error"
        assert "expired" in (done["error"] or ""), done
        late = await p.c.post(f"/api/hitl/{p.token}/decision", json={"action": "accept"})
        assert late.status_code == 410
        page = await p.c.get(f"/review/{p.token}")
        assert page.status_code == 410
        assert "expired" in page.text


async def test_expired_review_follows_the_error_handling(
    system: System, model: ModelServer
) -> None:
    async with paused_run(system, model, hitlTimeoutHours=0.0005, onErrorEnabled=True) as p:
        done = await wait_status(p.c, p.wid, p.run_id, {"error", "success"}, timeout=30)
        assert done["status"] == "success", done
        writer = next(
            x
            for x in done["node_results"]
            if x["node_label"] == "writer" and x["status"] == "success"
        )
        assert writer["output"]["_errorBranch"] is True
        assert "expired" in writer["output"]["error"]
