"""The scripted server answers the real openai client with text, tool calls, JSON and errors."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from libs.testing.model_server import HttpError, Match, ModelServer, Reply, Rule, Script, ToolCall

pytestmark = pytest.mark.unit

USER = [{"role": "user", "content": "What is the weather in Paris?"}]


def test_text_reply_with_the_sync_client(srv: ModelServer) -> None:
    srv.script = [Rule(when=Match(last_user_contains="Paris"), reply=Reply(text="Sunny."))]
    with openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0) as client:
        completion = client.chat.completions.create(model="gpt-test", messages=USER)
    choice = completion.choices[0]
    assert choice.message.content == "Sunny."
    assert choice.message.role == "assistant"
    assert choice.finish_reason == "stop"
    assert completion.object == "chat.completion"
    assert completion.model == "gpt-test"
    assert completion.usage is not None
    assert completion.usage.completion_tokens >= 1
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


def test_wire_shape_is_the_openai_chat_completion(srv: ModelServer) -> None:
    srv.script = [Rule(reply=Reply(text="hello"))]
    with httpx.Client() as http:
        body = http.post(
            f"{srv.base_url}/chat/completions", json={"model": "m", "messages": USER}
        ).json()
    assert set(body) == {"id", "object", "created", "model", "choices", "usage"}
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": "hello",
        "refusal": None,
    }
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


async def test_tool_call_reply_has_parseable_arguments(srv: ModelServer) -> None:
    call = ToolCall("get_weather", {"city": "Paris", "days": 2})
    srv.script = [Rule(when=Match(tool_offered="get_weather"), reply=Reply(tool_calls=[call]))]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="test") as client:
        completion = await client.chat.completions.create(model="m", messages=USER, tools=tools)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (tool_call,) = choice.message.tool_calls or []
    assert tool_call.type == "function"
    assert tool_call.function.name == "get_weather"
    assert json.loads(tool_call.function.arguments) == {"city": "Paris", "days": 2}
    assert tool_call.id


async def test_several_tool_calls_in_one_turn_and_malformed_arguments(srv: ModelServer) -> None:
    calls = [
        ToolCall("call_sub_agent", {"agent": "weather"}, id="call_a"),
        ToolCall("call_sub_agent", {"agent": "news"}, id="call_b"),
        ToolCall("broken", raw_arguments='{"city": "Par'),
    ]
    srv.script = [Rule(reply=Reply(tool_calls=calls))]
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="test") as client:
        completion = await client.chat.completions.create(model="m", messages=USER)
    got = completion.choices[0].message.tool_calls or []
    assert [c.id for c in got[:2]] == ["call_a", "call_b"]
    assert [json.loads(c.function.arguments)["agent"] for c in got[:2]] == ["weather", "news"]
    assert got[2].function.arguments == '{"city": "Par'
    assert len({c.id for c in got}) == 3


async def test_json_reply_for_response_format(srv: ModelServer) -> None:
    srv.script = [
        Rule(when=Match(response_format="json_object"), reply=Reply(json={"answer": 42})),
        Rule(reply=Reply(text="not json")),
    ]
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="test") as client:
        completion = await client.chat.completions.create(
            model="m", messages=USER, response_format={"type": "json_object"}
        )
    assert json.loads(completion.choices[0].message.content or "") == {"answer": 42}


async def test_scripted_errors_surface_as_openai_exceptions(srv: ModelServer) -> None:
    srv.script = [
        Rule(when=Match(last_user_contains="crash"), reply=Reply(error=HttpError(status=500))),
        Rule(
            when=Match(last_user_contains="busy"),
            reply=Reply(error=HttpError(status=429, message="slow down", type="rate_limit")),
        ),
    ]
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="t", max_retries=0) as client:
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "crash"}]
            )
        with pytest.raises(openai.RateLimitError) as raised:
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "busy"}]
            )
    assert raised.value.status_code == 429
    assert "slow down" in raised.value.message
    assert [e.status for e in srv.chat_requests] == [500, 429]


async def test_times_fails_once_then_the_client_retry_succeeds(srv: ModelServer) -> None:
    # retry-after-ms keeps the openai client's back-off short.
    flaky = HttpError(status=500, headers={"retry-after-ms": "10"})
    srv.script = [
        Rule(name="flaky", reply=Reply(error=flaky), times=1),
        Rule(name="ok", reply=Reply(text="recovered")),
    ]
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="t", max_retries=1) as client:
        completion = await client.chat.completions.create(model="m", messages=USER)
        again = await client.chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].message.content == "recovered"
    assert again.choices[0].message.content == "recovered"
    assert [(e.rule_name, e.status) for e in srv.chat_requests] == [
        ("flaky", 500),
        ("ok", 200),
        ("ok", 200),
    ]


def test_unmatched_requests_get_a_clear_default(srv: ModelServer) -> None:
    srv.script = [Rule(when=Match(model="other"), reply=Reply(text="never"))]
    with openai.OpenAI(base_url=srv.base_url, api_key="t", max_retries=0) as client:
        completion = client.chat.completions.create(model="m", messages=USER)
        assert completion.choices[0].message.content == "[model-server] no rule matched"
        srv.script = Script(unmatched_status=500)
        with pytest.raises(openai.InternalServerError, match="no rule matched"):
            client.chat.completions.create(model="m", messages=USER)
    assert [e.rule_index for e in srv.chat_requests] == [None, None]


def test_invalid_request_is_a_400(srv: ModelServer) -> None:
    with httpx.Client() as http:
        missing = http.post(f"{srv.base_url}/chat/completions", json={"model": "m"})
        garbage = http.post(f"{srv.base_url}/chat/completions", content=b"{nope")
    assert missing.status_code == 400
    assert "messages" in missing.json()["error"]["message"]
    assert garbage.status_code == 400
    assert [e.status for e in srv.chat_requests] == [400, 400]
