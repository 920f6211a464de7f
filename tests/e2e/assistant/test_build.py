"""Build mode: save, test with real runs, fix, pass, finish; the gate and the budget of five."""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from typing import Any

import pytest

from libs.testing.eventually import eventually
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import e, model_credential, n
from tests.e2e.assistant.helpers import conversation, of, reply, turn
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


def workflow(message: str, *, broken: bool = False, invalid: bool = False) -> dict[str, Any]:
    nodes = [
        n("in", "textInput", "userInput"),
        n("o", "output", "result", message=message),
    ]
    edges = [e("in", "o")]
    if broken:
        nodes.append(n("x", "throwError", "stop", errorMessage="not implemented yet"))
        edges = [e("in", "x"), e("x", "o")]
    if invalid:
        edges.append(e("in", "nowhere"))
    return {"name": "Greeter Bot", "description": "Says hello", "nodes": nodes, "edges": edges}


def steps(*calls: ToolCall | str) -> Script:
    """One scripted reply per model round of the turn, in order."""
    rules = []
    for k, call in enumerate(calls):
        reply = Reply(text=call) if isinstance(call, str) else Reply(tool_calls=[call])
        rules.append(
            Rule(
                name=f"r{k}",
                when=Match(predicate=lambda r, k=k: r.assistant_turns == k),
                reply=reply,
            )
        )
    return Script(rules=rules)


TEST = ToolCall("run_workflow_test", {"inputs": {"text": "Ada"}, "expect": "Hello Ada"})


async def test_build_fix_test_and_finish(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = steps(
            ToolCall(
                "save_workflow", {"workflow": workflow("Hello $userInput.text", invalid=True)}
            ),
            ToolCall("save_workflow", {"workflow": workflow("Hello $userInput.text", broken=True)}),
            ToolCall("finish", {"summary": "Done (too early)"}),
            TEST,
            ToolCall("save_workflow", {"workflow": workflow("Hello $userInput.text")}),
            TEST,
            ToolCall("finish", {"summary": "Built Greeter Bot; the test greeted Ada."}),
        )
        cid = await conversation(c)
        frames = await turn(c, cid, "Build a workflow that greets people", cred, build={})
        starts = of(frames, "tool_start")
        assert [s["label"] for s in starts] == [
            "Saving the workflow...",
            "Saving the workflow...",
            "Finishing...",
            "Testing the workflow · attempt 1/5...",
            "Saving the workflow...",
            "Testing the workflow · attempt 2/5...",
            "Finishing...",
        ]
        ends = of(frames, "tool_end")
        assert [x["status"] for x in ends] == [
            "error",
            "success",
            "refused",
            "error",
            "success",
            "success",
            "success",
        ]
        # The API's own validator answered the invalid save; the model got its problems.
        invalid = model.chat_requests[1].body["messages"][-1]["content"]
        assert "422" in invalid
        assert "nowhere" in invalid
        assert ends[1]["response_summary"] == 'Created "Greeter Bot"'
        assert ends[3]["response_summary"].startswith("Attempt 1/5 · error")
        assert ends[4]["response_summary"] == 'Saved "Greeter Bot" · version 2'
        assert ends[5]["response_summary"].startswith("Attempt 2/5 · success")
        refused = model.chat_requests[3].body["messages"][-1]["content"]
        assert "passing test run" in refused or "Nothing has been saved" in refused
        report = model.chat_requests[6].body["messages"][-1]["content"]
        assert "Hello Ada" in report
        assert reply(frames) == "Built Greeter Bot; the test greeted Ada."
        (verified,) = of(frames, "verified")
        created = of(frames, "workflow_created")
        wid = created[0]["workflow_id"]
        assert verified["workflow_id"] == wid
        assert {x["workflow_id"] for x in created} == {wid}
        # No model round after a successful finish.
        assert len(model.chat_requests) == 7
        # The saved workflow is the fixed version, with its versions kept.
        saved = (await c.get(f"/api/workflows/{wid}")).json()
        assert saved["nodes"][-1]["data"]["message"] == "Hello $userInput.text"
        assert len(saved["nodes"]) == 2
        versions = (await c.get(f"/api/workflows/{wid}/versions")).json()
        assert [v["version"] for v in versions] == [2, 1]


async def test_a_sixth_test_run_is_refused_and_the_tools_withdrawn(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = steps(
            ToolCall("save_workflow", {"workflow": workflow("x", broken=True)}),
            TEST,
            TEST,
            TEST,
            TEST,
            TEST,
            TEST,
            "It still fails: the throwError node stops every run; I would remove it.",
        )
        cid = await conversation(c)
        frames = await turn(c, cid, "Build a greeter", cred, build={})
        tests = [x for x in of(frames, "tool_end") if x["name"] == "run_workflow_test"]
        assert [x["status"] for x in tests] == ["error"] * 5 + ["refused"]
        offered = [
            {t["function"]["name"] for t in r.body.get("tools", [])} for r in model.chat_requests
        ]
        assert "run_workflow_test" in offered[5]
        assert "run_workflow_test" not in offered[6]
        assert "save_workflow" not in offered[6]
        assert "finish" not in offered[6]  # it would be refused
        assert "remove it" in reply(frames)

        async def test_runs() -> int:
            r = await c.get(
                "/api/workflows/history/all", params={"trigger_source": "dashboard_chat"}
            )
            return int(r.json()["total"])

        # the history is a projection: the fifth run's row follows its end shortly
        await eventually(lambda: _at_least(test_runs(), 5), timeout=10)
        assert await test_runs() == 5


async def _at_least(count: Awaitable[int], n: int) -> bool:
    return await count >= n
