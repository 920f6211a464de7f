"""Inspector pages over HTTP: a paused run links to its review page and shows its pause as a
gap, the cancel form cancels it; a sub-workflow's run is nested under the Execute node that
started it; the history list pages with the API's filters; a wait is drawn as a gap; live
streams are limited per user and end with the run."""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from html import escape
from typing import Any

import pytest

from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import ModelServer
from services.gateway.inspector.live_slots import LiveSlots
from tests.e2e.agents.helpers import create, model_credential, n
from tests.e2e.inspector.helpers import browser_client, csrf_of, sign_in
from tests.e2e.review.helpers import drafting_rules, review_workflow, script, wait_status
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


async def test_a_paused_run_links_to_its_review_and_the_cancel_form_cancels_it(
    system: System,
) -> None:
    _, key = await system.new_user()
    with ModelServer(script(*drafting_rules())) as model:
        async with HttpTarget() as target, system.client(key) as c:
            cred = await model_credential(c, model)
            wid = await create(c, *review_workflow(cred, f"{target.url}/echo/{uuid.uuid4().hex}"))
            r = await c.post(
                f"/api/workflows/{wid}/execute",
                json={"text": "go"},
                headers={"X-Simple-Response": "false"},
            )
            body = r.json()
            assert body["status"] == "pending", body
            run_id = body["execution_history_id"]
            review_url = body["outputs"]["writer"]["reviewUrl"]
            await wait_status(c, wid, run_id, {"pending"})
            async with browser_client(system) as ui:
                await sign_in(ui, key)
                page = await ui.get(f"/ui/runs/{run_id}")
                assert page.status_code == 200
                html = page.text
                assert 'data-status="pending"' in html
                assert f'class=review-link href="{escape(review_url)}"' in html
                assert "Waiting for a human review" in html
                # the pause is a gap on the writer's bar
                writer = html[html.index('data-label="writer"') :]
                assert re.search(r'<rect class="gap" x="[\d.]+"', writer[: writer.index("</svg>")])
                assert "sse-connect" not in html  # nothing to follow while it waits

                refused = await ui.post(f"/ui/runs/{run_id}/cancel", data={})
                assert refused.status_code == 403
                assert (await wait_status(c, wid, run_id, {"pending"}))["status"] == "pending"
                done = await ui.post(f"/ui/runs/{run_id}/cancel", data={"csrf": csrf_of(html)})
                assert done.status_code == 303
                assert done.headers["location"] == f"/ui/runs/{run_id}"
            ended = await wait_status(c, wid, run_id, {"cancelled", "error", "success"})
            assert ended["status"] == "cancelled"


async def test_a_sub_workflow_run_is_nested_under_its_execute_node(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        child = await create(
            c,
            [
                n("cin", "textInput", "childInput"),
                n("cs", "set", "childSet", mappings=[{"key": "v", "value": "42"}]),
            ],
            [{"id": "ce", "source": "cin", "target": "cs"}],
        )
        parent = await create(
            c,
            [
                n("in", "textInput", "userInput"),
                n("x", "execute", "callChild", executeWorkflowId=child),
            ],
            [{"id": "pe", "source": "in", "target": "x"}],
        )
        r = await c.post(
            f"/api/workflows/{parent}/execute",
            json={"text": "hi"},
            headers={"X-Simple-Response": "false"},
        )
        body = r.json()
        assert body["status"] == "success", body
        run_id = body["execution_history_id"]

        async def child_done() -> str:
            items = (await c.get(f"/api/workflows/{child}/history")).json()["items"]
            assert items, "the child's history row is not projected yet"
            assert items[0]["status"] == "success", items[0]
            await wait_status(c, parent, run_id, {"success"})
            return str(items[0]["id"])

        child_run = await eventually(child_done, timeout=20)
    async with browser_client(system) as ui:
        await sign_in(ui, key)
        html = (await ui.get(f"/ui/runs/{run_id}")).text
        execute_row = html[html.index('data-label="callChild"') :]
        # up to the next top-level row (class d0): everything inside the Execute node's body
        end = execute_row.find('<details class="tl-row d0"')
        nested = execute_row[: end if end > 0 else len(execute_row)]
        assert f'data-run-id="{child_run}"' in nested
        assert '<details class="tl-row d1" id="node-' in nested
        assert 'data-label="childSet"' in nested
        child_page = (await ui.get(f"/ui/runs/{child_run}")).text
        assert f'href="/ui/runs/{run_id}"' in child_page  # the way back to its parent


async def test_the_history_list_filters_and_pages(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        ok = await create(
            c,
            [
                n("in", "textInput", "userInput"),
                n("s", "set", "greet", mappings=[{"key": "m", "value": "hi"}]),
            ],
            [{"id": "e", "source": "in", "target": "s"}],
            name="lister-ok",
        )
        bad = await create(
            c,
            [n("in", "textInput", "userInput"), n("t", "throwError", "boom", errorMessage="no")],
            [{"id": "e", "source": "in", "target": "t"}],
            name="lister-bad",
        )
        for _ in range(3):
            await c.post(f"/api/workflows/{ok}/execute", json={"text": "x"})
        await c.post(f"/api/workflows/{bad}/execute", json={"text": "x"})
    async with browser_client(system) as ui:
        await sign_in(ui, key)
        page = (await ui.get("/ui/history", params={"limit": 25})).text
        assert page.count("<tr data-run-id=") == 4
        failed = (await ui.get("/ui/history", params={"status": "error"})).text
        assert failed.count("<tr data-run-id=") == 1
        assert 'data-status="error"' in failed
        found = (await ui.get("/ui/history", params={"search": "lister-ok"})).text
        assert found.count("<tr data-run-id=") == 3
        mine = (await ui.get(f"/ui/workflows/{bad}/history")).text
        assert mine.count("<tr data-run-id=") == 1
        assert "lister-bad: history" in mine
        sources = (await ui.get("/ui/history", params={"trigger_source": "MCP"})).text
        assert "No runs match." in sources
        assert (await ui.get("/ui/history", params={"status": "nope"})).status_code == 400
        assert (await ui.get("/ui/history", params={"limit": 7})).status_code == 400


async def _first_event(lines: Any) -> str:
    async for line in lines:
        if line.startswith("event:"):
            return str(line)
    raise AssertionError("the stream ended without an event")


async def test_a_wait_is_a_gap_and_live_streams_are_limited_per_user(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = await create(
            c,
            [n("in", "textInput", "req"), n("w", "wait", "pause", duration=6000)],
            [{"id": "e", "source": "in", "target": "w"}],
        )
        execution = asyncio.create_task(c.post(f"/api/workflows/{wid}/execute", json={}))

        async def running() -> str:
            items = (await c.get(f"/api/workflows/{wid}/history")).json()["items"]
            assert items, "no run yet"
            return str(items[0]["id"])

        run_id = await eventually(running, timeout=20)
        async with browser_client(system) as ui, contextlib.AsyncExitStack() as streams:
            await sign_in(ui, key)
            held = []
            for _ in range(LiveSlots().per_user):
                r = await streams.enter_async_context(ui.stream("GET", f"/ui/runs/{run_id}/live"))
                assert r.status_code == 200
                lines = r.aiter_lines()
                assert await _first_event(lines) == "event: entry"  # following: a slot is held
                held.append(lines)
            async with ui.stream("GET", f"/ui/runs/{run_id}/live") as extra:
                text = "".join([line async for line in extra.aiter_lines()])
            assert "data-kind=refused" in text
            assert "event: done" in text
            # one of the held streams follows the run to its end, and says so
            rest = "\n".join([line async for line in held[0]])
            assert "event: status" in rest
            assert 'data-status="success"' in rest
            assert rest.rstrip().endswith("data: end")
        assert (await execution).status_code == 200
        async with browser_client(system) as ui:
            await sign_in(ui, key)
            html = (await ui.get(f"/ui/runs/{run_id}")).text
        pause = html[html.index('data-label="pause"') :]
        assert re.search(r'<rect class="wait" x="[\d.]+" y="2" width="(\d{3})', pause), pause[:800]
