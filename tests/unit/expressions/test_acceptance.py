"""Acceptance cases ported from the original suite (spec §9.2 items 2, 7, 15-19)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from libs.expressions import (
    ExpressionFunctionError,
    ExpressionTooLongError,
    build_context,
    evaluate_condition,
    evaluate_single,
    render_template,
    resolve_value,
)

pytestmark = pytest.mark.unit


def test_item_2_logical_operators_between_references() -> None:
    ctx = build_context({}, {"a": {"ok": True, "x": 1}, "b": {"ok": False, "y": 5}})
    assert evaluate_condition("$a.ok == true && $b.ok == false", ctx) is True
    assert evaluate_condition("$a.x == 1 && $b.y == 0", ctx) is False
    assert evaluate_condition("$a.x == 0 || $b.y > 0", ctx) is True
    assert evaluate_condition("$a.ok &&", ctx) is False


def test_item_7_output_message_with_two_references_and_a_header() -> None:
    user_input = {"headers": {"user-agent": "UA-test"}, "query": {}, "body": {"text": "hi"}}
    ctx = build_context(
        {"translateAgent": {"model": "zai-glm-4.7", "text": "ok"}},
        {"userInput": user_input, "translateAgent": {"model": "zai-glm-4.7", "text": "ok"}},
    )
    message = resolve_value('$translateAgent.model , $userInput.headers["user-agent"]', ctx)
    assert message == "zai-glm-4.7 , UA-test"


def test_item_15_types_templates_undefined_and_length() -> None:
    ctx = build_context(
        {}, {"n": {"items": [1, 2], "meta": {"k": "v"}, "on": True, "count": 42, "t": "x"}}
    )
    assert resolve_value("$n.items", ctx) == [1, 2]
    assert resolve_value("$n.meta", ctx) == {"k": "v"}
    assert resolve_value("$n.on", ctx) is True
    assert resolve_value("$n.count", ctx) == 42
    assert resolve_value("prefix $n.t suffix", ctx) == "prefix x suffix"
    assert resolve_value("Count: $n.count", ctx) == "Count: 42"
    assert resolve_value("$unknown.field", ctx) is None
    with pytest.raises(ExpressionTooLongError):
        resolve_value("$" + "x" * 10001, ctx)


def test_item_16_range_int_and_length_difference() -> None:
    ctx = build_context({}, {"u": {"body": {"text": "5"}}, "g": {"uuid": "abc1def1gh"}})
    assert resolve_value("$range(1, 5)", ctx) == [1, 2, 3, 4]
    with pytest.raises(ExpressionFunctionError):
        resolve_value("$range(5, 1)", ctx)
    assert resolve_value("int($u.body.text)", ctx) == 5
    assert resolve_value("$range(1, int($u.body.text) + 1)", ctx) == [1, 2, 3, 4, 5]
    difference = resolve_value("$g.uuid.length - $g.uuid.replace('1', '').length", ctx)
    assert difference == 2
    assert difference is not True


def test_item_17_now_and_date_in_the_configured_timezone() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    ctx = build_context(
        {}, {}, now=datetime(2024, 1, 15, 14, 30, 0, tzinfo=berlin), timezone="Europe/Berlin"
    )
    assert evaluate_single("$Date().hour", ctx) == 14
    assert evaluate_single("$now.hour", ctx) == 14
    assert evaluate_single("$now.format()", ctx) == "2024-01-15 14:30:00"
    assert evaluate_single('$Date("2024-01-15T08:09:10+00:00").format()', ctx) == (
        "2024-01-15 08:09:10"
    )
    assert evaluate_single('$Date("2024-06-01T15:30:00+00:00").format("YYYY-MM-DD")', ctx) == (
        "2024-06-01"
    )


def test_item_18_items_key_and_object_iteration() -> None:
    ctx = build_context(
        {},
        {
            "d": {"items": "from-json-key", "keys": [10, 20]},
            "sheet": {"rows": [{"colA": "foo", "colB": "bar", "colC": None}]},
        },
    )
    assert resolve_value("$d.items", ctx) == "from-json-key"
    assert resolve_value("$d.keys", ctx) == [10, 20]
    assert resolve_value("$sheet.rows.first().keys()", ctx) == ["colA", "colB", "colC"]
    assert resolve_value("$sheet.rows.first().values()", ctx) == ["foo", "bar", None]
    assert resolve_value("$sheet.rows.first().map('item.key')", ctx) == ["colA", "colB", "colC"]
    assert resolve_value("$sheet.rows.first().filter('item.value != null').length", ctx) == 2
    assert resolve_value("$sheet.rows.first().entries()", ctx)[0] == {"key": "colA", "value": "foo"}


def test_item_19_vars_visible_downstream_and_through_global() -> None:
    ctx = build_context(
        {}, {}, vars={"savedName": "Ada"}, global_vars={"apiBase": "https://x", "savedName": "old"}
    )
    assert resolve_value("$vars.savedName", ctx) == "Ada"
    assert resolve_value("$global.savedName", ctx) == "Ada"
    assert resolve_value("$global.apiBase", ctx) == "https://x"
    assert render_template("Hi $vars.savedName", ctx) == "Hi Ada"


def test_vars_add_returns_the_appended_array() -> None:
    site = {"url": "https://heym.run/", "items": [{"q": "Q1", "score": -3}]}
    ctx = build_context({}, {"evaluateSite": site}, vars={"evaluationResults": []})
    assert resolve_value("$vars.evaluationResults.add(evaluateSite)", ctx) == [site]
