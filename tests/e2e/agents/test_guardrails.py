"""Guardrails end to end (Heym §4.1): the resolved user message is classified by the guardrail
model before the agent's first model call; a violation fails the node (no retry, category and
severity in the error); the recorded verdict is never asked again after a restart; missing or
foreign guardrail credentials are clear errors at save time and at run time."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from contracts.agents import GuardrailChecked
from libs.testing.eventually import eventually
from libs.testing.model_server import LedgerEntry, Match, ModelServer, Reply, Rule, Script
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

CLASSIFYING = "content-safety filter"


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(script(answer=Reply(text="hello"))) as server:
        yield server


def script(answer: Reply) -> Script:
    return Script(
        rules=[
            Rule(
                name="guard",
                when=Match(system_contains=CLASSIFYING, last_user_contains="attack"),
                reply=Reply(json={"violated": ["violence"]}),
            ),
            Rule(
                name="guard",
                when=Match(system_contains=CLASSIFYING),
                reply=Reply(json={"violated": []}),
            ),
            Rule(name="answer", reply=answer),
        ]
    )


def guarded(cred: str, **extra: Any) -> dict[str, Any]:
    return agent(
        "a",
        "guarded",
        cred,
        guardrailsEnabled=True,
        guardrailsCategories=["violence", "harassment"],
        guardrailsSeverity="high",
        guardrailCredentialId=cred,
        guardrailModel="guard-model",
        **extra,
    )


def of(model: ModelServer, rule: str) -> list[LedgerEntry]:
    return [r for r in model.chat_requests if r.rule_name == rule]


async def execute(c: httpx.AsyncClient, wid: str, text: str) -> dict[str, Any]:
    r = await c.post(
        f"/api/workflows/{wid}/execute",
        json={"text": text},
        headers={"X-Simple-Response": "false"},
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_a_violation_fails_the_node_without_an_agent_call_and_a_clean_message_passes(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        node = guarded(cred, retryEnabled=True, retryMaxAttempts=3, retryWaitSeconds=0.1)
        wid = await create(c, [n("in", "textInput", "req"), node], [e("in", "a")])

        body = await execute(c, wid, "I will attack you tomorrow")
        assert body["status"] == "error"
        error = body["outputs"]["error"]
        assert "Guardrail violation" in error
        assert "violence" in error
        assert "high" in error
        assert len(of(model, "guard")) == 1  # a violation is not retried
        assert of(model, "answer") == []  # the agent's model was never asked

        body = await execute(c, wid, "hello there")
        assert body["status"] == "success"
        assert body["outputs"]["guarded"]["text"] == "hello"
        guard, answer = of(model, "guard")[-1], of(model, "answer")[-1]
        assert guard.seq < answer.seq  # classified before the agent's first call
        assert guard.body["model"] == "guard-model"
        assert guard.body["temperature"] == 0
        assert "hello there" in guard.body["messages"][-1]["content"]

        async def two_traces() -> dict[str, Any]:
            found = (await c.get("/api/traces", params={"source": "guardrail"})).json()
            assert found["total"] == 2, found
            return dict(found)

        traces = await eventually(two_traces, timeout=10)
        assert {t["request_type"] for t in traces["items"]} == {"guardrail_classification"}
        assert {t["model"] for t in traces["items"]} == {"guard-model"}


async def test_a_restart_after_the_check_does_not_classify_again(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    model.script = script(answer=Reply(text="slow hello", delay=1.5))
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await create(c, [n("in", "textInput", "req"), guarded(cred)], [e("in", "a")])
        run = asyncio.create_task(execute(c, wid, "hello there"))
        await eventually(lambda: len(of(model, "answer")) == 1, timeout=30)
        await system.kill("agent_runtime")
        await system.restart("agent_runtime")
        body = await asyncio.wait_for(run, 90)
    assert body["status"] == "success"
    assert body["outputs"]["guarded"]["text"] == "slow hello"
    assert len(of(model, "guard")) == 1  # the recorded verdict was replayed, not asked again
    assert len(of(model, "answer")) == 2  # in flight at the kill: not recorded, so asked again
    checks = [
        env.event
        for env in await system.events(body["execution_history_id"])
        if isinstance(env.event, GuardrailChecked)
    ]
    assert [c.outcome for c in checks] == ["passed"]


async def test_guardrail_configuration_errors_are_clear_at_save_and_at_run_time(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    _, other_key = await system.new_user()
    async with system.client(other_key) as oc:
        foreign = await model_credential(oc, model)
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        missing = agent("a", "guarded", cred, guardrailsEnabled=True)
        r = await c.post("/api/workflows", json={"name": "g", "nodes": [missing], "edges": []})
        assert r.status_code == 422, r.text
        assert {p["field"] for p in r.json()["extra"] if p.get("code") == "guardrail_config"} == {
            "guardrailCredentialId",
            "guardrailModel",
        }
        theirs = guarded(cred)
        theirs["data"]["guardrailCredentialId"] = foreign
        r = await c.post("/api/workflows", json={"name": "g", "nodes": [theirs], "edges": []})
        assert r.status_code == 422, r.text
        assert "not one of your credentials" in r.text

        guard_cred = await model_credential(c, model, name="guard")
        node = guarded(cred)
        node["data"]["guardrailCredentialId"] = guard_cred
        wid = await create(c, [n("in", "textInput", "req"), node], [e("in", "a")])
        assert (await c.delete(f"/api/credentials/{guard_cred}")).status_code == 204
        body = await execute(c, wid, "hello there")
    assert body["status"] == "error"
    assert "Guardrails: credential" in body["outputs"]["error"]
    assert "not found" in body["outputs"]["error"]
    assert of(model, "guard") == []
    assert of(model, "answer") == []
