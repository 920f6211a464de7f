"""The inspector's live Debug panel, Traces tab and hostile agent text in a real browser:
a run opened while it runs updates from its stream and ends with its final status without a
reload; the traces tab lists the run's LLM calls and shows their requests redacted (an API
key the model put in a tool argument appears as [REDACTED]); agent text with `<script>` and
`javascript:` links is inert."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from libs.testing.eventually import eventually
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.browser import DESKTOP, browser_context
from tests.e2e.inspector.test_run_detail_browser import sign_in_browser
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

HOSTILE = (
    "# Result\n\n"
    "<script>window.__xss = 'script'; alert('script')</script>\n\n"
    "<img src=\"x\" onerror=\"window.__xss = 'img'; alert('img')\">\n\n"
    "[click me](javascript:window.__xss='link';alert('link'))\n\n"
    '<a href="javascript:alert(1)" id="raw">raw link</a>\n\n'
    "Plain **bold** text and a [safe link](https://example.com/docs)."
)


async def _running(c: httpx.AsyncClient, wid: str) -> str:
    async def started() -> str:
        items = (await c.get(f"/api/workflows/{wid}/history")).json()["items"]
        assert items, "no run yet"
        assert items[0]["status"] == "running", items[0]
        return str(items[0]["id"])

    return await eventually(started, timeout=30)


async def test_a_run_in_progress_updates_live_and_ends_without_a_reload(system: System) -> None:
    _, key = await system.new_user()
    turns = 4
    rules = [
        Rule(
            name=f"turn{k}",
            when=Match(tool_offered="fetch_page", predicate=lambda r, k=k: r.assistant_turns == k),
            reply=Reply(tool_calls=[ToolCall("fetch_page", {})], delay=0.8),
        )
        for k in range(turns)
    ]
    rules.append(Rule(name="final", reply=Reply(text="Finished reading.", delay=0.8)))
    with ModelServer(Script(rules=rules)) as model:
        async with system.client(key) as c:
            cred = await model_credential(c, model)
            nodes = [
                n("in", "textInput", "request"),
                agent("a", "slowpoke", cred, userMessage="$request.text"),
                n("p", "set", "Fetch Page", mappings=[{"key": "page", "value": "a page"}]),
            ]
            wid = await create(c, nodes, [e("in", "a"), e("p", "a", target_handle="tool-input")])
            execution = asyncio.create_task(
                c.post(f"/api/workflows/{wid}/execute", json={"text": "read"}, timeout=120)
            )
            run_id = await _running(c, wid)
            async with browser_context(viewport=DESKTOP) as context:
                page = await context.new_page()
                await sign_in_browser(page, system.base_url, key)
                await page.goto(f"{system.base_url}/ui/runs/{run_id}")
                badge = page.locator("#status-badge")
                assert await badge.get_attribute("data-status") == "running"
                assert await page.locator("#debug-panel").is_visible()
                await page.evaluate("window.__marker = 42")

                # a tool call ends while the run is still running: shown at once
                await page.wait_for_selector("#debug-log li[data-kind=tool-result]", timeout=30_000)
                assert await badge.get_attribute("data-status") == "running"
                entries = await page.locator("#debug-log li").all_inner_texts()
                assert any("slowpoke" in t and "started" in t for t in entries), entries
                assert any("fetch_page" in t and "success" in t for t in entries), entries

                await page.wait_for_selector(
                    "#status-badge[data-status=success]", state="attached", timeout=60_000
                )
                assert await page.evaluate("window.__marker") == 42  # the same page: no reload
                navigations = await page.evaluate(
                    "performance.getEntriesByType('navigation').length"
                )
                assert navigations == 1
                assert "no longer following" in await page.locator("#live-state").inner_text()
                ends = page.locator("#debug-log li[data-kind=execution_complete]")
                assert await ends.count() == 1
                # the timeline was swapped in from the read model with the finished agent
                agent_row = page.locator('#timeline details[data-label="slowpoke"]')
                assert await agent_row.get_attribute("data-status") == "success"
                results = page.locator("#debug-log li[data-kind=tool-result]")
                assert await results.count() == turns
            r = await execution
            assert r.status_code == 200, r.text


async def test_the_traces_tab_shows_a_run_s_calls_with_secrets_redacted(system: System) -> None:
    _, key = await system.new_user()
    api_key = "sk-live-" + "Q7w8E9r0" * 4
    script = Script(
        rules=[
            Rule(
                when=Match(assistant_turns=0),
                reply=Reply(tool_calls=[ToolCall("leaky", {"api_key": api_key, "q": "x"})]),
            ),
            Rule(when=Match(last_is_tool_result=True), reply=Reply(text="done")),
        ]
    )
    with ModelServer(script) as model:
        async with system.client(key) as c:
            cred = await model_credential(c, model)
            leaky = n(
                "l",
                "set",
                "Leaky",
                agentProvidedFields=["api_key", "q"],
                mappings=[{"key": "echo", "value": "$input.q"}],
            )
            wid = await create(
                c,
                [n("in", "textInput", "req"), agent("a", "careful", cred), leaky],
                [e("in", "a"), e("l", "a", target_handle="tool-input")],
            )
            r = await c.post(
                f"/api/workflows/{wid}/execute",
                json={"text": "hello"},
                headers={"X-Simple-Response": "false"},
            )
            assert r.status_code == 200, r.text
            run_id = r.json()["execution_history_id"]

            async def traced() -> bool:
                found = (await c.get("/api/traces", params={"run_id": run_id})).json()
                assert found["total"] == 2, found
                return True

            await eventually(traced, timeout=15)

    async with browser_context(viewport=DESKTOP) as context:
        page = await context.new_page()
        await sign_in_browser(page, system.base_url, key)
        await page.goto(f"{system.base_url}/ui/runs/{run_id}")
        await page.locator("#run-traces").click()
        await page.wait_for_url(re.compile(r".*/ui/traces\?run_id="))
        rows = page.locator("tr[data-trace-id]")
        assert await rows.count() == 2
        cells = await rows.first.locator("td").all_inner_texts()
        assert {"workflow", "chat.completions", "test-model"} <= set(cells), cells
        links = await page.eval_on_selector_all(
            "tr[data-trace-id] td:first-child a", "els => els.map(e => e.href)"
        )
        redacted = 0
        for link in links:
            await page.goto(link)
            text = await page.locator("main").inner_text()
            assert api_key not in text
            assert api_key not in await page.content()
            shown = await page.locator("#trace-request").inner_text()
            shown += await page.locator("#trace-response").inner_text()
            redacted += '"api_key": "[REDACTED]"' in shown
        # the model's call with its arguments is stored with the first call (a trace's
        # request keeps the messages new to that call, its response the model's answer)
        assert redacted == 1


async def test_hostile_agent_text_is_inert_in_the_browser(system: System) -> None:
    _, key = await system.new_user()
    with ModelServer(Script(rules=[Rule(reply=Reply(text=HOSTILE))])) as model:
        async with system.client(key) as c:
            cred = await model_credential(c, model)
            label = "<img src=x onerror=\"window.__xss='label'\">"
            nodes = [
                n("in", "textInput", "req"),
                agent("a", "writer", cred),
                n("o", "output", label),
            ]
            wid = await create(c, nodes, [e("in", "a"), e("a", "o")])
            r = await c.post(
                f"/api/workflows/{wid}/execute",
                json={"text": "<script>window.__xss='input'</script>"},
                headers={"X-Simple-Response": "false"},
            )
            assert r.status_code == 200, r.text
            run_id = r.json()["execution_history_id"]
    async with browser_context(viewport=DESKTOP) as context:
        page = await context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), asyncio.ensure_future(d.dismiss())))
        await sign_in_browser(page, system.base_url, key)
        await page.goto(f"{system.base_url}/ui/runs/{run_id}")
        writer = page.locator('details[data-label="writer"]')
        await writer.locator(":scope > summary").click()
        text = writer.locator(".agent-text")
        assert await text.locator("strong").inner_text() == "bold"
        assert await page.locator("script:not([src])").count() == 0
        assert await page.locator("[onerror]").count() == 0
        assert await page.locator("img").count() == 0
        hrefs = await text.evaluate("el => Array.from(el.querySelectorAll('a')).map(a => a.href)")
        assert hrefs == ["https://example.com/docs"], hrefs
        for words in ("click me", "raw link"):
            found = text.get_by_text(words)
            if await found.count():
                await found.first.click()
        # the hostile label is shown as text
        labels = await page.eval_on_selector_all(
            ".tl-name .label", "els => els.map(e => e.textContent)"
        )
        assert label in labels, labels
        await page.wait_for_timeout(300)
        assert await page.evaluate("window.__xss === undefined")
        assert dialogs == []
        assert page.url.endswith(f"/ui/runs/{run_id}")
