"""Built-in functions (spec §3.2) and function errors that fail the node."""

from __future__ import annotations

from typing import Any

import pytest

from libs.expressions import (
    ExpressionContext,
    ExpressionError,
    ExpressionFunctionError,
    build_context,
    evaluate_single,
    render_template,
    resolve_value,
)

pytestmark = pytest.mark.unit


def _eval(text: str, **names: Any) -> Any:
    return evaluate_single(text, build_context({}, names, random_seed=11))


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("$str(5)", "5"),
        ("$str(true)", "true"),
        ("$str(null)", "null"),
        ("$str(o)", '{"k": [1]}'),
        ("$int('42')", 42),
        ("$int(' 7.9 ')", 7),
        ("$int(3.7)", 3),
        ("$float('2.5')", 2.5),
        ("$bool(0)", False),
        ("$bool('x')", True),
        ("$list('ab')", ["a", "b"]),
        ("$list(o)", ["k"]),
        ("$list(5)", [5]),
        ("$dict(name='Ali', age=30)", {"name": "Ali", "age": 30}),
        ("$len(o.k)", 1),
        ("$abs(-3)", 3),
        ("$min(4, 2, 8)", 2),
        ("$max([4, 2, 8])", 8),
        ("$round(2.567, 2)", 2.57),
        ("$sum([1, 2, 3])", 6),
        ("$sorted([3, 1, 2])", [1, 2, 3]),
        ("$sorted([3, 1, 2], true)", [3, 2, 1]),
        ("$array(1, 'two', null)", [1, "two", None]),
        ("$array()", []),
        ("$notNull([1, null, 2])", [1, 2]),
        ("$upper('ab')", "AB"),
        ("$lower('AB')", "ab"),
        ("$strip('  a ')", "a"),
        ("$capitalize('hello there')", "Hello there"),
        ("$title('hello there')", "Hello There"),
        ("$upper(5)", 5),
        ("$split('a b')", ["a", "b"]),
        ("$split('a-b', '-')", ["a", "b"]),
        ("$join('+', ['a', 1, null])", "a+1+"),
        ("$join(['a', 'b'], '/')", "a/b"),
        ("$replace('aXbX', 'X', '-')", "a-b-"),
        ("$regexReplace('a1b22', '\\d+', '#')", "a#b#"),
        ("$concat('a', 1, null, true)", "a1true"),
        ("$range(1, 5)", [1, 2, 3, 4]),
        ("$range(3, 3)", []),
        ("$range(4)", [0, 1, 2, 3]),
        ("$range('2', 4.0)", [2, 3]),
    ],
)
def test_function(expr: str, expected: Any) -> None:
    assert _eval(expr, o={"k": [1]}) == expected


def test_hash_function() -> None:
    assert _eval("$hash('abc')") == "900150983cd24fb0d6963f7d28e17f72"


def test_random_int_is_inclusive_and_seeded() -> None:
    values = {_eval("$randomInt(1, 2)") for _ in range(3)}
    assert values <= {1, 2}
    ctx_a = build_context({}, {}, random_seed=99)
    ctx_b = build_context({}, {}, random_seed=99)
    seq_a = [evaluate_single("$randomInt(0, 1000)", ctx_a) for _ in range(5)]
    seq_b = [evaluate_single("$randomInt(0, 1000)", ctx_b) for _ in range(5)]
    assert seq_a == seq_b
    assert 0 <= _eval("$randomInt()") <= 100


def test_range_with_a_greater_than_b_fails_the_node(ctx: ExpressionContext) -> None:
    # Spec §9.2 item 16: only function errors propagate; this one names the problem.
    with pytest.raises(ExpressionFunctionError) as caught:
        resolve_value("$range(5, 1)", ctx)
    assert caught.value.expression == "$range(5, 1)"
    assert "a <= b" in caught.value.message
    assert "a=5, b=1" in str(caught.value)


@pytest.mark.parametrize("args", ["1.5, 3", "'x', 3", "true, 3", "1, null"])
def test_range_with_non_integers_fails(ctx: ExpressionContext, args: str) -> None:
    with pytest.raises(ExpressionFunctionError, match="must be an integer"):
        evaluate_single(f"$range({args})", ctx)


def test_range_length_is_capped(ctx: ExpressionContext) -> None:
    with pytest.raises(ExpressionFunctionError, match="maximum"):
        evaluate_single("$range(0, 10 ** 9)", ctx)


def test_random_int_with_reversed_bounds_fails(ctx: ExpressionContext) -> None:
    with pytest.raises(ExpressionFunctionError):
        evaluate_single("$randomInt(9, 1)", ctx)


def test_function_errors_propagate_from_every_mode(ctx: ExpressionContext) -> None:
    with pytest.raises(ExpressionFunctionError):
        render_template("items: $range(3, 1)", ctx)
    with pytest.raises(ExpressionFunctionError):
        resolve_value("$range(3, 1).length + 1", ctx)
    with pytest.raises(ExpressionFunctionError):
        resolve_value("len($range(3, 1))", ctx)
    with pytest.raises(ExpressionFunctionError):
        evaluate_single("$array($range(3, 1))", ctx)
    with pytest.raises(ExpressionFunctionError):
        evaluate_single("$data.list.map('range(3, 1)')", ctx)


def test_function_error_is_an_expression_error() -> None:
    assert issubclass(ExpressionFunctionError, ExpressionError)


def test_other_evaluator_errors_are_null(ctx: ExpressionContext) -> None:
    assert evaluate_single("$int('abc')", ctx) is None
    assert evaluate_single("$data.count / 0", ctx) is None
    assert evaluate_single("$nosuchfunction(1)", ctx) is None


def test_range_in_arithmetic_with_nested_int(ctx: ExpressionContext) -> None:
    expr = "$range(1, int($userInput.body.text) + 1).map('item * 3').filter('item % 2 == 0')"
    assert resolve_value(expr, ctx) == [6, 12]
