"""Context construction rules (spec §3.1)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from libs.expressions import (
    ExpressionContext,
    ExpressionError,
    build_context,
    evaluate_single,
    render_template,
)

pytestmark = pytest.mark.unit


def test_direct_input_keys_are_flattened_and_labels_win() -> None:
    ctx = build_context({"src": {"text": "hi", "src": "shadowed"}}, {})
    assert evaluate_single("$text", ctx) == "hi"
    assert evaluate_single("$src", ctx) == {"text": "hi", "src": "shadowed"}


def test_non_dict_direct_input_is_only_under_its_label() -> None:
    ctx = build_context({"num": 42}, {})
    assert evaluate_single("$num", ctx) == 42
    assert evaluate_single("$input", ctx) == {"value": 42}


def test_upstream_labels_are_visible_and_others_are_not() -> None:
    ctx = build_context({"b": {"x": 1}}, {"a": {"deep": "yes"}, "b": {"x": 1}})
    assert evaluate_single("$a.deep", ctx) == "yes"
    assert evaluate_single("$stranger.x", ctx) is None


def test_input_searches_every_name_and_bare_input_is_the_first_direct_input() -> None:
    ctx = build_context({"first": {"text": "one"}, "second": {"other": "two"}}, {})
    assert evaluate_single("$input.other", ctx) == "two"
    assert evaluate_single("$input", ctx) == {"text": "one"}
    assert evaluate_single("$input", ctx, preserve_type=False) == '{"text": "one"}'


def test_input_without_direct_inputs_is_empty() -> None:
    ctx = build_context({}, {})
    assert evaluate_single("$input", ctx) == {}
    assert evaluate_single("$input.text", ctx) is None


def test_builtin_literals(ctx: ExpressionContext) -> None:
    assert evaluate_single("$null", ctx) is None
    assert evaluate_single("$undefined", ctx) is None
    assert evaluate_single("$true", ctx) is True
    assert evaluate_single("$false", ctx) is False


def test_vars_and_global_overlay(ctx: ExpressionContext) -> None:
    assert evaluate_single("$vars.counter", ctx) == 3
    assert evaluate_single("$global.apiBase", ctx) == "https://api.example.com"
    # Run variables overlay stored globals of the same name (spec §9.2 item 19).
    assert evaluate_single("$global.counter", ctx) == 3
    assert evaluate_single("$global.records", ctx) == ["r1"]


def test_credentials(ctx: ExpressionContext) -> None:
    assert evaluate_single("$credentials.MyToken", ctx) == "Bearer abc"
    assert render_template("Authorization: $credentials.MyToken", ctx) == (
        "Authorization: Bearer abc"
    )


def test_uuid_is_fresh_32_hex_and_reproducible_with_a_seed() -> None:
    first = build_context({}, {}, random_seed=1)
    values = [evaluate_single("$UUID", first) for _ in range(2)]
    assert all(len(v) == 32 and int(v, 16) >= 0 for v in values)
    assert values[0] != values[1]
    again = build_context({}, {}, random_seed=1)
    assert evaluate_single("$UUID", again) == values[0]


def test_now_is_pinned_and_shown_in_the_configured_timezone() -> None:
    pinned = datetime(2024, 7, 1, 22, 15, tzinfo=UTC)
    ctx = build_context({}, {}, now=pinned, timezone="Asia/Tokyo")
    assert evaluate_single("$now", ctx) == "2024-07-02T07:15:00+09:00"
    assert evaluate_single("$now.hour", ctx) == 7


def test_naive_now_is_read_as_utc() -> None:
    ctx = build_context({}, {}, now=datetime(2024, 1, 1, 12, 0), timezone="Europe/Berlin")
    assert evaluate_single("$now.hour", ctx) == 13


def test_current_time_is_used_when_now_is_not_given() -> None:
    before = datetime.now(UTC).year
    assert evaluate_single("$now.year", build_context({}, {})) in (before, before + 1)


def test_unknown_timezone_is_an_error() -> None:
    with pytest.raises(ExpressionError, match="unknown timezone"):
        build_context({}, {}, timezone="Mars/Olympus")


def test_extra_names_are_overlaid_and_visible_through_input() -> None:
    ctx = build_context({"src": {"item": "old"}}, {}, extra={"item": {"n": 2}})
    assert evaluate_single("$item.n", ctx) == 2
    assert evaluate_single("$input.item.n", ctx) == 2


def test_with_names_overlays_without_touching_the_original(ctx: ExpressionContext) -> None:
    looped = ctx.with_names({"item": "x"})
    assert evaluate_single("$item", looped) == "x"
    assert evaluate_single("$item", ctx) is None


def test_evaluation_does_not_mutate_inputs() -> None:
    records = ["a"]
    ctx = build_context({}, {}, vars={"records": records})
    assert evaluate_single("$vars.records.add('b')", ctx) == ["a", "b"]
    assert records == ["a"]
