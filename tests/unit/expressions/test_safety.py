"""Limits, sandboxing and plain results: what the engine refuses and what it returns."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from libs.expressions import (
    MAX_EXPRESSION_LENGTH,
    ExpressionContext,
    ExpressionSizeLimitError,
    ExpressionTooLongError,
    ExpressionWorkLimitError,
    _budget,
    build_context,
    evaluate_condition,
    evaluate_single,
    render_template,
    resolve_value,
    stringify,
    to_plain,
)
from libs.expressions._budget import Limits
from libs.expressions._dates import DotDateTime

pytestmark = pytest.mark.unit


class TestLength:
    def test_over_length_expression_is_rejected(self, ctx: ExpressionContext) -> None:
        text = "$" + "x" * MAX_EXPRESSION_LENGTH
        with pytest.raises(ExpressionTooLongError) as caught:
            evaluate_single(text, ctx)
        assert "10001 characters" in caught.value.message
        assert "maximum is 10000" in str(caught.value)
        assert caught.value.expression == text
        with pytest.raises(ExpressionTooLongError):
            resolve_value(text, ctx)

    def test_limit_itself_is_accepted(self, ctx: ExpressionContext) -> None:
        text = "$" + "x" * (MAX_EXPRESSION_LENGTH - 1)
        assert evaluate_single(text, ctx) is None

    def test_long_templates_are_fine_when_each_span_is_short(self, ctx: ExpressionContext) -> None:
        text = "lorem ipsum " * 2000 + "$userInput.name"
        assert render_template(text, ctx).endswith("lorem ipsum Ada")

    def test_over_length_span_in_a_template_is_rejected(self, ctx: ExpressionContext) -> None:
        with pytest.raises(ExpressionTooLongError):
            render_template("a $f(" + "1" * MAX_EXPRESSION_LENGTH + ") b", ctx)


class TestSandbox:
    @pytest.mark.parametrize(
        "expr",
        [
            "$data.__class__",
            "$data.count.__class__.__subclasses__()",
            "$userInput.name.__len__()",
            "$Date.__globals__",
            "$str.__self__",
            "$now._dt",
            "$userInput.name.format(1)",
            "$data.list.append(4)",
            "$data.meta.update({'x': 1})",
            "$data.meta.pop('key')",
            "$__import__('os')",
            "$open('/etc/passwd')",
            "$type(1)",
            "$getattr(data, 'items')",
            "$(lambda: 1)()",
            "$f'{data.count:>999999999}'",
        ],
    )
    def test_unsafe_or_unknown_access_is_null(self, ctx: ExpressionContext, expr: str) -> None:
        assert evaluate_single(expr, ctx) is None

    def test_mutating_calls_do_not_change_the_context(self, ctx: ExpressionContext) -> None:
        evaluate_single("$data.list.append(4)", ctx)
        evaluate_single("$data.meta.pop('key')", ctx)
        assert evaluate_single("$data.list", ctx) == [3, 1, 2]
        assert evaluate_single("$data.meta", ctx) == {"key": "val"}

    def test_huge_powers_are_refused(self, ctx: ExpressionContext) -> None:
        with pytest.raises(ExpressionSizeLimitError, match="digits"):
            evaluate_single("$4000000 ** 4000000", ctx)
        assert evaluate_single("$2 ** 64", ctx) == 2**64
        assert evaluate_single("$1 ** 4000000", ctx) == 1

    def test_runaway_nested_loops_hit_the_work_limit(
        self, ctx: ExpressionContext, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A small budget keeps the test fast; the shape of the failure is the same.
        monkeypatch.setattr(_budget, "LIMITS", Limits(steps=20_000))
        nested = "$range(0, 200).map(\"range(0, 200).map('item')\")"
        with pytest.raises(ExpressionWorkLimitError, match="20000 evaluation steps"):
            evaluate_single(nested, ctx)
        assert evaluate_single("$range(0, 200).map('item * 2').length", ctx) == 200

    def test_work_limit_makes_a_condition_false(
        self, ctx: ExpressionContext, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(_budget, "LIMITS", Limits(steps=20_000))
        text = "$range(0, 200).map(\"range(0, 200).map('item')\").length > 0"
        assert evaluate_condition(text, ctx) is False
        assert evaluate_condition("$range(0, 200).length > 0", ctx) is True

    def test_default_budget_allows_large_single_loops(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$range(0, 20000).map('item * 2').last()", ctx) == 39998

    def test_comprehensions_work_within_limits(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$[x * 2 for x in data.list if x > 1]", ctx) == [6, 4]

    def test_invalid_escape_sequences_do_not_warn(self, ctx: ExpressionContext) -> None:
        # pytest turns warnings into errors here, so a DeprecationWarning would fail this.
        assert evaluate_single("$'a\\d' + 'b'", ctx) == "a\\db"


class TestPlainResults:
    def test_to_plain_unwraps_everything(self) -> None:
        moment = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
        value: Any = {
            "d": DotDateTime(moment),
            "t": (1, 2),
            "s": {3, 1},
            "raw": moment,
            "day": date(2024, 1, 2),
            "n": {1: "int key"},
            "f": len,
            "b": b"bytes",
        }
        assert to_plain(value) == {
            "d": "2024-01-02T03:04:05+00:00",
            "t": [1, 2],
            "s": [1, 3],
            "raw": "2024-01-02T03:04:05+00:00",
            "day": "2024-01-02",
            "n": {"1": "int key"},
            "f": None,
            "b": "bytes",
        }

    def test_results_serialise_as_json(self, ctx: ExpressionContext) -> None:
        result = resolve_value("${'now': now, 'list': data.list, 'up': userInput.name.upper}", ctx)
        assert json.loads(json.dumps(result)) == {
            "now": "2024-01-15T14:30:05+01:00",
            "list": [3, 1, 2],
            "up": "ADA",
        }

    def test_returned_values_are_exact_builtin_types(self, ctx: ExpressionContext) -> None:
        for expr in ["$data.count", "$userInput.name.upper()", "$data.list", "$data.meta"]:
            value = evaluate_single(expr, ctx)
            assert type(value) in (int, str, list, dict)

    def test_stringify_spelling(self) -> None:
        assert stringify(None) == "null"
        assert stringify(False) == "false"
        assert stringify([1, "é"]) == '[1, "é"]'
        assert stringify(2.0) == "2.0"


def test_context_is_reusable_across_calls() -> None:
    ctx = build_context({"src": {"n": 1}}, {})
    assert [evaluate_single("$n + 1", ctx) for _ in range(3)] == [2, 2, 2]


@pytest.mark.parametrize("name", sorted(n for n in dir(dict) if not n.startswith("_")))
def test_no_dict_attribute_is_ever_a_value(name: str) -> None:
    ctx = build_context({"d": {"a": 1}}, {"d": {"a": 1}})
    assert resolve_value(f"$d.{name}", ctx) is None
    assert render_template(f"x $d.{name} y", ctx) == f"x $d.{name} y"
    keyed = build_context({}, {"d": {name: "the key"}})
    assert resolve_value(f"$d.{name}", keyed) == "the key"


@pytest.mark.parametrize("name", sorted(n for n in dir(list) if not n.startswith("_")))
def test_no_list_attribute_is_ever_a_value(name: str) -> None:
    ctx = build_context({}, {"xs": [3, 1, 2]})
    assert resolve_value(f"$xs.{name}", ctx) is None
