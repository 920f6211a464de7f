"""The Heym Agent and human review: a run it starts pauses for review (`pending` with the link,
a `workflow_pending` frame), then `resolve_hitl_review` decides it through the review page's
decision function and the run completes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.assistant.helpers import MODEL, conversation, of, reply, turn
from tests.e2e.review.helpers import DRAFT, drafting_rules, token_of, wait_status
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


def assistant(*rules: Rule) -> list[Rule]:
    """Rules for the assistant's model only (the workflow's agent uses another model)."""
    return [Rule(when=Match(model=MODEL, **_fields(r.when)), reply=r.reply) for r in rules]


def _fields(match: Match) -> dict[str, Any]:
    return {
        k: getattr(match, k)
        for k in match.__struct_fields__
        if getattr(match, k) is not None and k != "model"
    }


async def test_assistant_reports_the_pending_review_then_resolves_it(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await create(
            c,
            [
                n("in", "textInput", "request"),
                agent("w", "writer", cred, hitlEnabled=True, userMessage="$request.text"),
                n("o", "output", "answer", message="$writer.text"),
            ],
            [e("in", "w"), e("w", "o")],
        )
        model.script = Script(
            rules=[
                *assistant(
                    Rule(
                        when=Match(last_is_tool_result=False),
                        reply=Reply(
                            tool_calls=[
                                ToolCall(
                                    "execute_workflow",
                                    {"workflow_id": wid, "inputs": {"text": "write it"}},
                                )
                            ]
                        ),
                    ),
                    Rule(
                        when=Match(tool_result_for="execute_workflow"),
                        reply=Reply(text="It waits for your review: {tool_results}"),
                    ),
                ),
                *drafting_rules(),
            ]
        )
        cid = await conversation(c)
        frames = await turn(c, cid, "Run the launch email workflow", cred)
        (end,) = [f for f in of(frames, "tool_end") if f["name"] == "execute_workflow"]
        assert end["status"] == "pending", frames
        (pending,) = of(frames, "workflow_pending")
        assert pending["review_url"].startswith(system.base_url + "/review/")
        assert pending["draft_text"] == DRAFT
        assert pending["request_id"]
        run_id = pending["execution_history_id"]
        # the model got the pending review with its link, and said so
        assert pending["review_url"] in reply(frames)
        await wait_status(c, wid, run_id, {"pending"})

        model.script = Script(
            rules=[
                *assistant(
                    Rule(
                        when=Match(last_is_tool_result=False, last_user_contains="Accept"),
                        reply=Reply(
                            tool_calls=[
                                ToolCall(
                                    "resolve_hitl_review",
                                    {"action": "accept", "request_id": pending["request_id"]},
                                )
                            ]
                        ),
                    ),
                    Rule(
                        when=Match(tool_result_for="resolve_hitl_review"),
                        reply=Reply(
                            tool_calls=[
                                ToolCall(
                                    "wait_for_execution_update",
                                    {"execution_history_id": run_id, "interval_seconds": 1},
                                )
                            ]
                        ),
                    ),
                    Rule(
                        when=Match(tool_result_for="wait_for_execution_update"),
                        reply=Reply(text="Done: {tool_results}"),
                    ),
                ),
                *drafting_rules(),
            ]
        )
        frames = await turn(c, cid, "Accept the draft", cred)
        starts = [f for f in of(frames, "tool_start") if f["name"] == "resolve_hitl_review"]
        assert starts[0]["label"] == "Resolving human review..."
        (resolved,) = [f for f in of(frames, "tool_end") if f["name"] == "resolve_hitl_review"]
        assert resolved["status"] == "success", frames
        done = await wait_status(c, wid, run_id, {"success", "error"})
        assert done["status"] == "success", done
        writer = next(x for x in done["node_results"] if x["node_label"] == "writer")
        assert writer["output"]["decision"] == "accepted"
        assert '"status": "success"' in reply(frames)
        # a second decider loses: the review page's decision is refused
        r = await c.post(
            f"/api/hitl/{token_of(pending['review_url'])}/decision", json={"action": "refuse"}
        )
        assert r.status_code == 409, r.text


async def test_resolve_refuses_another_users_review_and_bad_arguments(
    system: System, model: ModelServer
) -> None:
    _, owner_key = await system.new_user()
    _, other_key = await system.new_user()
    async with system.client(owner_key) as c:
        cred = await model_credential(c, model)
        wid = await create(
            c,
            [
                n("in", "textInput", "request"),
                agent("w", "writer", cred, hitlEnabled=True, userMessage="$request.text"),
            ],
            [e("in", "w")],
        )
        model.script = Script(rules=drafting_rules())
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "draft"},
            headers={"X-Simple-Response": "false"},
        )
        body = r.json()
        assert body["status"] == "pending", body
        request_id = body["outputs"]["writer"]["requestId"]
    async with system.client(other_key) as c:
        other_cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                *assistant(
                    Rule(
                        when=Match(last_is_tool_result=False),
                        reply=Reply(
                            tool_calls=[
                                ToolCall(
                                    "resolve_hitl_review",
                                    {"action": "accept", "request_id": request_id},
                                    id="c1",
                                ),
                                ToolCall(
                                    "resolve_hitl_review",
                                    {"action": "edit", "request_id": request_id},
                                    id="c2",
                                ),
                            ]
                        ),
                    ),
                    Rule(
                        when=Match(tool_result_for="resolve_hitl_review"),
                        reply=Reply(text="{tool_results}"),
                    ),
                )
            ]
        )
        cid = await conversation(c)
        frames = await turn(c, cid, "accept it", other_cred)
    ends = [f for f in of(frames, "tool_end") if f["name"] == "resolve_hitl_review"]
    assert [f["status"] for f in ends] == ["error", "error"]
    text = reply(frames)
    assert "No pending review of yours" in text
    assert "an edit needs a non-empty edited_text" in text
    # still pending for its owner
    async with system.client(owner_key) as c:
        await wait_status(c, wid, body["execution_history_id"], {"pending"})
