"""Building blocks for human review tests: a drafting agent, its review branch, and waiting
for a run's history entry to reach a status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx

from libs.testing.model_server import Match, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, e, n

DRAFT = "# Launch email\n\nHello team, we launch **on Monday**.\n\n- bring snacks"
SUMMARY = "Send the launch email to every customer"


def drafting_rules(draft: str = DRAFT, summary: str = SUMMARY) -> list[Rule]:
    """The agent drafts and asks for review at once; after the decision it answers with the
    tool result it got (so the approved text shows in its output)."""
    return [
        Rule(
            name="draft",
            when=Match(tool_offered="request_human_review", assistant_turns=0),
            reply=Reply(
                tool_calls=[
                    ToolCall(
                        "request_human_review",
                        {"summary": summary, "review_markdown": draft, "reason": "emails"},
                    )
                ]
            ),
        ),
        Rule(
            name="after-review",
            when=Match(tool_result_for="request_human_review"),
            reply=Reply(text="FINAL {tool_results}"),
        ),
    ]


def review_workflow(cred: str, notify_url: str, **agent_data: Any) -> tuple[list[Any], list[Any]]:
    """input -> writer (HITL) -> answer, and writer's review branch -> notify (an HTTP node
    posting the review link)."""
    nodes = [
        n("in", "textInput", "request"),
        agent(
            "w",
            "writer",
            cred,
            hitlEnabled=True,
            hitlSummary="Ask before sending any email.",
            userMessage="$request.text",
            **agent_data,
        ),
        n("o", "output", "answer", message="$writer.text"),
        n(
            "notify",
            "http",
            "notify",
            curl=(
                f"curl -X POST {notify_url} -H 'Content-Type: application/json' "
                '-d \'{"url": "$writer.reviewUrl", "request": "$writer.requestId"}\''
            ),
        ),
    ]
    edges = [e("in", "w"), e("w", "o"), e("w", "notify", source_handle="hitl")]
    return nodes, edges


def token_of(review_url: str) -> str:
    return review_url.rsplit("/review/", 1)[1]


async def history(c: httpx.AsyncClient, wid: str, run_id: str) -> dict[str, Any]:
    r = await c.get(f"/api/workflows/{wid}/history/{run_id}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def wait_entry(
    c: httpx.AsyncClient,
    wid: str,
    run_id: str,
    done: Callable[[dict[str, Any]], bool],
    timeout: float = 60,
) -> dict[str, Any]:
    """The run's history entry once `done(entry)` holds."""
    deadline = time.monotonic() + timeout
    entry: dict[str, Any] = {}
    while time.monotonic() < deadline:
        r = await c.get(f"/api/workflows/{wid}/history/{run_id}")
        if r.status_code == 200:
            entry = r.json()
            if done(entry):
                return entry
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} never got there: {entry.get('status')}")


async def wait_status(
    c: httpx.AsyncClient, wid: str, run_id: str, statuses: set[str], timeout: float = 60
) -> dict[str, Any]:
    return await wait_entry(c, wid, run_id, lambda x: x["status"] in statuses, timeout)


def script(*rules: Rule) -> Script:
    return Script(rules=list(rules))
