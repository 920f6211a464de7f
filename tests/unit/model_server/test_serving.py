"""Concurrency, delays, hangs, streaming, model cards and the ledger/script controls."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import openai
import pytest

from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall

pytestmark = pytest.mark.unit

USER = [{"role": "user", "content": "hello"}]


async def test_delayed_requests_are_served_concurrently(srv: ModelServer) -> None:
    srv.script = [Rule(reply=Reply(text="late", delay=0.3))]
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="t") as client:
        # Warm the connection pool first so the bound measures serving, not connecting.
        await client.models.retrieve("m")
        started = time.monotonic()
        completions = await asyncio.gather(
            *(client.chat.completions.create(model="m", messages=USER) for _ in range(4))
        )
        elapsed = time.monotonic() - started
    assert [c.choices[0].message.content for c in completions] == ["late"] * 4
    assert 0.3 <= elapsed < 0.8


def test_a_hang_outlasts_the_client_timeout_and_does_not_block_stop() -> None:
    script = Script(rules=[Rule(reply=Reply(hang=True))], hang_seconds=60)
    server = ModelServer(script).start()
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0, timeout=0.3)
        with client, pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=USER)
    finally:
        server.stop()
    assert [e.status for e in server.chat_requests] == [200]


async def test_streamed_text_and_tool_calls_reassemble(srv: ModelServer) -> None:
    long_text = "A streamed answer that spans several chunks of text."
    srv.script = [
        Rule(when=Match(tools_offered=False), reply=Reply(text=long_text)),
        Rule(reply=Reply(tool_calls=[ToolCall("search", {"query": "x" * 40})])),
    ]
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="t") as client:
        stream = await client.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == long_text
        assert chunks[-1].usage is not None
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"

        stream = await client.chat.completions.create(
            model="m", messages=USER, tools=tools, stream=True
        )
        arguments = ""
        names = []
        async for chunk in stream:
            for delta in chunk.choices[0].delta.tool_calls or []:
                names += [delta.function.name] if delta.function and delta.function.name else []
                arguments += (delta.function.arguments or "") if delta.function else ""
    assert names == ["search"]
    assert json.loads(arguments) == {"query": "x" * 40}


async def test_model_cards_carry_the_context_window(srv: ModelServer) -> None:
    srv.script = Script(context_windows={"small-model": 8192})
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="t") as client:
        small = await client.models.retrieve("small-model")
        other = await client.models.retrieve("org/any-model")
        listed = [m.id async for m in client.models.list()]
    assert small.id == "small-model"
    assert small.owned_by == "heym-test"
    assert (small.model_extra or {})["context_window"] == 8192
    assert (other.model_extra or {})["context_window"] == 128000
    assert other.id == "org/any-model"
    assert listed == ["small-model"]


def test_ledger_records_every_request_in_process_and_over_http(srv: ModelServer) -> None:
    srv.script = [Rule(name="greet", reply=Reply(text="hi"))]
    with openai.OpenAI(base_url=srv.base_url, api_key="t") as client:
        client.chat.completions.create(model="m", messages=USER, temperature=0.2, max_tokens=5)
        client.models.retrieve("m")
    (chat, model) = srv.ledger
    assert chat.path == "/v1/chat/completions"
    assert chat.body["temperature"] == 0.2
    assert chat.body["max_tokens"] == 5
    assert chat.body["messages"] == USER
    assert (chat.rule_index, chat.rule_name, chat.status) == (0, "greet", 200)
    assert chat.response["choices"][0]["message"]["content"] == "hi"
    assert chat.seq < model.seq
    assert chat.received_at <= model.received_at
    assert model.path == "/v1/models/m"

    with httpx.Client(base_url=srv.url) as http:
        over_http = http.get("/_ledger").json()
        assert [e["path"] for e in over_http] == ["/v1/chat/completions", "/v1/models/m"]
        assert over_http[0]["rule_name"] == "greet"
        assert http.delete("/_ledger").status_code == 204
        assert http.get("/_ledger").json() == []
    assert srv.ledger == []


def test_script_can_be_replaced_over_http(srv: ModelServer) -> None:
    replacement = {"rules": [{"when": {"model": "m"}, "reply": {"text": "replaced"}}]}
    with httpx.Client(base_url=srv.url) as http:
        assert http.put("/_script", json=replacement).json() == {"rules": 1}
        rejected = http.put("/_script", json={"rules": [{"reply": {"txt": "typo"}}]})
        assert rejected.status_code == 400
        assert "txt" in rejected.json()["error"]["message"]
    with openai.OpenAI(base_url=srv.base_url, api_key="t") as client:
        completion = client.chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].message.content == "replaced"
