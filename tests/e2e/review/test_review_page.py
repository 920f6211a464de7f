"""The review page in a real browser (Debian's chromium driven by Playwright): open the link
from the pending payload at phone width, edit the draft, submit, see the confirmation; the run
completes with the edited text. A hostile draft (script, img onerror, javascript: links) is
inert in the browser. A phone-width screenshot is saved under the test's tmp dir."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from libs.testing.http_target import HttpTarget
from libs.testing.model_server import ModelServer
from tests.e2e.agents.helpers import create, model_credential
from tests.e2e.browser import PHONE, phone_page
from tests.e2e.review.helpers import drafting_rules, review_workflow, script, wait_status
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

HOSTILE = (
    "# Plan\n\n"
    "<script>window.__xss = 'script'; alert('script')</script>\n\n"
    "<img src=\"x\" onerror=\"window.__xss = 'img'; alert('img')\">\n\n"
    "[click me](javascript:window.__xss='link';alert('link'))\n\n"
    '<a href="javascript:alert(1)" id="raw">raw link</a>\n\n'
    "Plain **bold** text and a [safe link](https://example.com/docs)."
)


async def _paused(system: System, c: Any, model: ModelServer, target: HttpTarget) -> Any:
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
    return wid, body["execution_history_id"], body["outputs"]["writer"]


async def test_edit_in_the_browser_completes_the_run(system: System, tmp_path: Path) -> None:
    edited = "We launch on **Wednesday** instead."
    with ModelServer(script(*drafting_rules())) as model:
        _, key = await system.new_user()
        async with HttpTarget() as target, system.client(key) as c, phone_page() as page:
            wid, run_id, pending = await _paused(system, c, model, target)
            response = await page.goto(pending["reviewUrl"])
            assert response is not None
            assert response.status == 200
            csp = response.headers["content-security-policy"]
            assert "default-src 'none'" in csp
            assert "script-src" not in csp  # no script at all: default-src 'none' covers it
            assert await page.locator("#summary").inner_text() == pending["summary"]
            assert await page.locator("#draft h1").inner_text() == "Launch email"
            # one column at phone width: the page does not scroll sideways
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"]
            shot = tmp_path / "review-page-phone.png"
            await page.screenshot(path=str(shot), full_page=True)
            print(f"review page screenshot (phone width): {shot}")
            assert shot.stat().st_size > 1000

            await page.locator("#edit-panel summary").click()
            await page.locator("#edited_text").fill(edited)
            await page.locator("#submit-edit").click()
            await page.wait_for_selector("#outcome")
            assert await page.locator("#outcome").get_attribute("data-decision") == "edited"
            assert "edited version" in await page.locator(".outcome").inner_text()

            done = await wait_status(c, wid, run_id, {"success", "error"})
            assert done["status"] == "success", done
            writer = next(x for x in done["node_results"] if x["node_label"] == "writer")
            assert writer["output"]["decision"] == "edited"
            assert writer["output"]["editedText"] == edited
            assert edited in done["outputs"]["answer"]["result"]

            # the link is single-use: opened again it says so
            again = await page.goto(pending["reviewUrl"])
            assert again is not None
            assert again.status == 410
            assert await page.locator("#ended").get_attribute("data-standing") == "decided"


async def test_hostile_draft_is_inert_in_the_browser(system: System) -> None:
    with ModelServer(script(*drafting_rules(draft=HOSTILE))) as model:
        _, key = await system.new_user()
        async with HttpTarget() as target, system.client(key) as c, phone_page() as page:
            _, _, pending = await _paused(system, c, model, target)
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            response = await page.goto(pending["reviewUrl"])
            assert response is not None
            assert response.status == 200
            draft = page.locator("#draft")
            assert await draft.locator("strong").inner_text() == "bold"
            assert await page.locator("script").count() == 0
            assert await page.locator("[onerror]").count() == 0
            assert await page.locator("img").count() == 0
            hrefs = await page.eval_on_selector_all("a", "els => els.map(e => e.href)")
            assert hrefs == ["https://example.com/docs"], hrefs
            # following what is left of the hostile links runs nothing
            for text in ("click me", "raw link"):
                found = page.get_by_text(text)
                if await found.count():
                    await found.first.click()
            await page.wait_for_timeout(300)
            assert await page.evaluate("window.__xss === undefined")
            assert dialogs == []
            assert await page.evaluate("location.href") == pending["reviewUrl"]
