"""The inspector in a real browser (Debian's chromium driven by Playwright): sign in with an
API key, open a workflow's history, open a run with parallel branches and an agent that has
a sub-agent and compresses its context. The timeline's parallel bars overlap, the agent's tool
calls show their statuses and times, the nested sub-agent and the compression line are there,
numbers and times are in the viewer's locale and time zone; the Traces tab lists the run's
calls and the compression's before/after token estimates. Screenshots at desktop and phone
width are saved (paths printed)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from libs.testing.http_target import HttpTarget
from libs.testing.model_server import ModelServer
from tests.e2e import artifacts
from tests.e2e.agents.helpers import create, model_credential
from tests.e2e.browser import DESKTOP, PHONE, browser_context
from tests.e2e.inspector.workflows import parallel_agent_workflow, planner_script
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

# What sticks out past the right edge of the screen (named in a failure).
WIDER_THAN_THE_SCREEN = """w => Array.from(document.querySelectorAll('*'))
    .filter(e => e.getBoundingClientRect().right > w).slice(0, 5)
    .map(e => e.tagName + '.' + e.className + ' ' + e.textContent.slice(0, 30))"""


async def sign_in_browser(page: Any, base_url: str, key: str) -> None:
    await page.goto(f"{base_url}/ui/signin")
    await page.locator("#api_key").fill(key)
    await page.locator("#signin").click()
    await page.wait_for_url(re.compile(r".*/ui/history$"))


async def _box(page: Any, selector: str) -> dict[str, float]:
    box = await page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return dict(box)


async def test_a_run_with_parallel_branches_a_sub_agent_and_a_compression(
    system: System,
) -> None:
    _, key = await system.new_user()
    with ModelServer(planner_script()) as model:
        async with HttpTarget() as target, system.client(key) as c:
            cred = await model_credential(c, model)
            slow = f"{target.url}/delay/1500"
            wid = await create(c, *parallel_agent_workflow(cred, slow))
            r = await c.post(
                f"/api/workflows/{wid}/execute",
                json={"text": "Plan the launch"},
                headers={"X-Simple-Response": "false"},
            )
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["status"] == "success", body
            run_id = body["execution_history_id"]
            planner = next(x for x in body["node_results"] if x["node_label"] == "planner")
            calls = planner["output"]["tool_calls"]
            assert any(x["name"] == "_context_compression" for x in calls), calls

    # The viewer is in Tokyo and reads German.
    async with browser_context(
        viewport=DESKTOP, locale="de-DE", timezone_id="Asia/Tokyo"
    ) as context:
        page = await context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        await sign_in_browser(page, system.base_url, key)
        row = page.locator(f'tr[data-run-id="{run_id}"]')
        assert await row.get_attribute("data-status") == "success"
        await row.locator('a[href^="/ui/workflows/"]').click()
        await page.wait_for_url(re.compile(rf".*/ui/workflows/{wid}/history$"))
        await page.locator(f'tr[data-run-id="{run_id}"] a.mono').click()
        await page.wait_for_url(re.compile(rf".*/ui/runs/{run_id}$"))
        assert await page.locator("#status-badge").get_attribute("data-status") == "success"

        # parallel branches: the two bars overlap on the time axis, on rows of their own
        slow_bar = await _box(page, 'details[data-label="slowApi"] > summary rect.bar')
        plan_bar = await _box(page, 'details[data-label="planner"] > summary rect.bar')
        assert slow_bar["x"] < plan_bar["x"] + plan_bar["width"]
        assert plan_bar["x"] < slow_bar["x"] + slow_bar["width"]
        assert slow_bar["y"] != plan_bar["y"]
        assert slow_bar["width"] > 20  # 1.5 s of the run, not a tick

        planner = page.locator('details[data-label="planner"]').first
        await planner.locator(":scope > summary").click()
        tools = planner.locator(":scope > .tl-body > details.tl-tool")
        assert await tools.count() >= 3
        for i in range(await tools.count()):
            tool = tools.nth(i)
            assert await tool.get_attribute("data-status") == "success"
            assert await tool.locator(":scope > summary .badge").inner_text() == "success"
            took = await tool.locator(":scope > summary .took").inner_text()
            assert re.fullmatch(r"[\d.,]+ (ms|s)", took), took  # formatted elapsed_ms
            assert await tool.locator(":scope > summary rect.bar").count() == 1
        delegate = planner.locator('details.tl-tool[data-tool="call_sub_agent"]')
        await delegate.locator(":scope > summary").click()
        nested = delegate.locator(
            '.tl-nested[data-sub-agent="helper"] details[data-label="helper"]'
        )
        assert await nested.count() == 1
        await nested.locator(":scope > summary").click()
        assert "The facts hold." in await nested.locator(".agent-text").inner_text()
        started = await delegate.locator("dd time").first.get_attribute("datetime")
        assert started is not None

        compression = planner.locator("[data-compression]")
        assert await compression.count() >= 1
        text = await compression.first.inner_text()
        assert re.search(r"Context compressed \(\d+ messages → summary\)", text), text
        assert re.search(r"\d\.\d{3} → ", text), text  # German thousands separator

        # times in the viewer's zone: Tokyo is UTC+9
        stamp = await delegate.locator("dd time").first.inner_text()
        utc = datetime.fromisoformat(started).astimezone(UTC)
        tokyo = utc + timedelta(hours=9)
        assert f"{tokyo:%H:%M:%S}" in stamp, (stamp, started)
        assert stamp != started

        shots = artifacts.directory()
        desktop = shots / f"inspector-run-desktop-{uuid.uuid4().hex[:6]}.png"
        await page.screenshot(path=str(desktop), full_page=True)
        artifacts.saved(desktop, "inspector run detail screenshot (desktop width)")
        assert errors == [], errors  # no CSP violation, no script error

        # the Traces tab: the run's calls, the compression with its token estimates
        await page.locator("#run-traces").click()
        await page.wait_for_url(re.compile(r".*/ui/traces\?run_id="))
        squeeze = page.locator('tr[data-request-type="context.compression"]')
        assert await squeeze.count() == 1
        calls = page.locator('tr[data-request-type="chat.completions"]')
        assert await calls.count() >= 5  # planner turns, the summary, the helper
        await squeeze.locator("td a").first.click()
        await page.wait_for_url(re.compile(r".*/ui/traces/[^?]+$"))
        estimates = await page.locator("#compression").inner_text()
        assert re.search(r"Before\s+\d+ messages, about \d\.\d{3} tokens", estimates), estimates
        assert re.search(r"After\s+\d+ messages, about \d\.\d{3} tokens", estimates), estimates

        phone = await context.new_page()
        await phone.set_viewport_size(PHONE)
        await phone.goto(f"{system.base_url}/ui/runs/{run_id}")
        await phone.locator('details[data-label="planner"] > summary').first.click()
        width = await phone.evaluate("document.documentElement.scrollWidth")
        wide = await phone.evaluate(WIDER_THAN_THE_SCREEN, PHONE["width"])
        assert width <= PHONE["width"], (width, wide)  # one column: no sideways scrolling
        shot = shots / f"inspector-run-phone-{uuid.uuid4().hex[:6]}.png"
        await phone.screenshot(path=str(shot), full_page=True)
        artifacts.saved(shot, "inspector run detail screenshot (phone width)")
        await phone.goto(f"{system.base_url}/ui/history")
        width = await phone.evaluate("document.documentElement.scrollWidth")
        wide = await phone.evaluate(WIDER_THAN_THE_SCREEN, PHONE["width"])
        assert width <= PHONE["width"], (width, wide)
        shot = shots / f"inspector-history-phone-{uuid.uuid4().hex[:6]}.png"
        await phone.screenshot(path=str(shot), full_page=True)
        artifacts.saved(shot, "inspector history screenshot (phone width)")
