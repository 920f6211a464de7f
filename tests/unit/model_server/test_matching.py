"""Rule selection, placeholders and delays, checked on the HTTP-free engine."""

from __future__ import annotations

import json
from typing import Any

import pytest

from libs.testing.model_server import ChatRequest, Match, Reply, Rule, Script, ToolCall
from libs.testing.model_server._engine import Engine, Outcome

pytestmark = pytest.mark.unit

WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}


def ask(engine: Engine, messages: list[dict[str, Any]], **fields: Any) -> Outcome:
    body = {"model": "m", "messages": messages, **fields}
    return engine.chat(json.dumps(body).encode())


def content(outcome: Outcome) -> Any:
    return outcome.body["choices"][0]["message"]["content"]


def rule_named(name: str, **when: Any) -> Rule:
    return Rule(name=name, when=Match(**when), reply=Reply(text=name))


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_first_matching_rule_wins_and_conditions_combine() -> None:
    engine = Engine(
        Script(
            rules=[
                rule_named("both", last_user_contains="Paris", system_contains="terse"),
                rule_named("paris", last_user_contains="Paris"),
                rule_named("exact", last_user_equals="hi"),
                rule_named("regex", last_user_regex=r"^\d+$"),
                rule_named("model", model="special"),
            ]
        )
    )
    system = {"role": "system", "content": "Be terse."}
    assert content(ask(engine, [system, user("Paris?")])) == "both"
    assert content(ask(engine, [user("Paris?")])) == "paris"
    assert content(ask(engine, [user("hi")])) == "exact"
    assert content(ask(engine, [user("hi there")])) == "[model-server] no rule matched"
    assert content(ask(engine, [user("123")])) == "regex"
    special = engine.chat(json.dumps({"model": "special", "messages": []}).encode())
    assert content(special) == "model"


def test_user_text_from_content_parts() -> None:
    engine = Engine(Script(rules=[rule_named("parts", last_user_contains="Lyon")]))
    parts = {"role": "user", "content": [{"type": "text", "text": "to Lyon"}]}
    assert content(ask(engine, [parts])) == "parts"


def test_tool_offers_and_tool_choice() -> None:
    engine = Engine(
        Script(
            rules=[
                rule_named("forced", tool_choice="get_weather"),
                rule_named("required", tool_choice="required"),
                rule_named("offered", tool_offered="get_weather", tool_choice="auto"),
                rule_named("no-tools", tools_offered=False, tool_choice="none"),
            ]
        )
    )
    forced = {"type": "function", "function": {"name": "get_weather"}}
    tools = [WEATHER_TOOL]
    assert content(ask(engine, [user("x")], tools=tools, tool_choice=forced)) == "forced"
    assert content(ask(engine, [user("x")], tools=tools, tool_choice="required")) == "required"
    assert content(ask(engine, [user("x")], tools=tools)) == "offered"
    assert content(ask(engine, [user("x")])) == "no-tools"


def test_tool_results_matching_and_the_tool_results_placeholder() -> None:
    calls = [ToolCall("call_sub_agent", {"task": "{last_user}"})]
    engine = Engine(
        Script(
            rules=[
                Rule(
                    when=Match(tool_result_for="call_sub_agent", tool_result_contains="Sunny"),
                    reply=Reply(text="Both results: {tool_results}"),
                ),
                Rule(when=Match(assistant_turns=0), reply=Reply(tool_calls=calls)),
            ]
        )
    )
    first = ask(engine, [user("weather and news")])
    (call,) = first.body["choices"][0]["message"]["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"task": "weather and news"}
    history = [
        user("weather and news"),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "Sunny in Paris"},
        {"role": "tool", "tool_call_id": call["id"], "content": "No news"},
    ]
    assert content(ask(engine, history)) == "Both results: Sunny in Paris\nNo news"


def test_predicate_receives_the_parsed_request() -> None:
    seen: list[ChatRequest] = []

    def long_conversation(request: ChatRequest) -> bool:
        seen.append(request)
        return len(request.messages) > 2

    engine = Engine(Script(rules=[rule_named("long", predicate=long_conversation)]))
    assert content(ask(engine, [user("a"), user("b"), user("c")])) == "long"
    assert content(ask(engine, [user("a")])) == "[model-server] no rule matched"
    assert [r.last_user_text for r in seen] == ["c", "a"]


def test_a_raising_predicate_is_reported_as_a_500() -> None:
    def broken(request: ChatRequest) -> bool:
        raise KeyError("oops")

    outcome = ask(Engine(Script(rules=[rule_named("x", predicate=broken)])), [user("a")])
    assert outcome.status == 500
    assert "predicate raised" in outcome.body["error"]["message"]


def test_times_budget_and_replacing_the_script_resets_it() -> None:
    once = Rule(name="once", reply=Reply(text="first"), times=1)
    engine = Engine(Script(rules=[once, rule_named("after")]))
    assert [content(ask(engine, [user("x")])) for _ in range(3)] == ["first", "after", "after"]
    engine.replace_script(Script(rules=[once]))
    assert content(ask(engine, [user("x")])) == "first"
    assert [e.rule_name for e in engine.ledger()] == ["once", "after", "after", "once"]


def test_delay_comes_from_the_rule_else_the_script_latency() -> None:
    script = Script(
        rules=[
            Rule(when=Match(last_user_equals="slow"), reply=Reply(text="s", delay=1.5)),
            Rule(when=Match(last_user_equals="hang"), reply=Reply(hang=True)),
            Rule(reply=Reply(text="default")),
        ],
        latency=0.25,
        hang_seconds=90,
    )
    engine = Engine(script)
    assert ask(engine, [user("slow")]).delay == 1.5
    assert ask(engine, [user("hang")]).delay == 90
    assert ask(engine, [user("other")]).delay == 0.25
