"""Issue #7 items 2 and 3: every evaluation has a time, work and size budget, no Python repr.

A budget test that hangs without the budget is bounded by its own pytest timeout: the
assertion is that a clear error comes back, never how fast.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import msgspec
import pytest

from libs.expressions import (
    ExpressionContext,
    ExpressionFunctionError,
    ExpressionSizeLimitError,
    ExpressionTimeLimitError,
    _budget,
    evaluate_condition,
    evaluate_off_loop,
    evaluate_single,
    evaluate_soon,
    render_template,
    resolve_value,
)
from libs.expressions._budget import InlineSlice, Limits, NeedsThread, inline_slice

pytestmark = pytest.mark.unit


class TestLinearRegex:
    @pytest.mark.timeout(20)
    @pytest.mark.parametrize(
        "expr",
        [
            '$regexReplace("' + "a" * 40 + '!", "(a+)+$", "")',
            '$"' + "a" * 40 + '!".regexReplace("(a+)+$", "")',
        ],
    )
    def test_catastrophic_pattern_matches_in_linear_time(
        self, ctx: ExpressionContext, expr: str
    ) -> None:
        # Python's backtracking `re` needs ~2**40 steps here; RE2 does not backtrack.
        assert evaluate_single(expr, ctx) == "a" * 40 + "!"

    def test_replacement_groups_still_expand(self, ctx: ExpressionContext) -> None:
        swapped = evaluate_single('$"01-15".regexReplace("(\\\\d+)-(\\\\d+)", "\\\\2/\\\\1")', ctx)
        assert swapped == "15/01"
        assert evaluate_single("$regexReplace('ab ab', '(a)(b)', '\\\\2\\\\1')", ctx) == "ba ba"

    def test_unsupported_pattern_is_a_clear_error(self, ctx: ExpressionContext) -> None:
        with pytest.raises(ExpressionFunctionError, match="not supported"):
            evaluate_single("$regexReplace('aa', '(a)\\\\1', '')", ctx)


class TestWorkAndTime:
    @pytest.mark.timeout(20)
    def test_repeated_squaring_stops_at_the_number_budget(self, ctx: ExpressionContext) -> None:
        squared = "[y * y for y in [x * x for x in [3 ** 300000]]]"
        with pytest.raises(ExpressionSizeLimitError, match="digits"):
            evaluate_single(f"${squared}", ctx)
        with pytest.raises(ExpressionSizeLimitError):
            evaluate_single("$10 ** 5000", ctx)
        with pytest.raises(ExpressionSizeLimitError):
            evaluate_single("$1 << 20000", ctx)
        assert evaluate_single("$2 ** 100", ctx) == 2**100

    def test_wall_clock_budget_stops_long_evaluations(
        self, ctx: ExpressionContext, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Within the step budget, but over a (tiny) time budget.
        monkeypatch.setattr(_budget, "LIMITS", Limits(seconds=0.02))
        with pytest.raises(ExpressionTimeLimitError, match=r"longer than 0\.02s"):
            evaluate_single("$range(0, 100000).map('item * 2 + 1').length", ctx)

    def test_one_budget_covers_nested_spans_and_the_ladder(
        self, ctx: ExpressionContext, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(_budget, "LIMITS", Limits(steps=3_000))
        heavy = "$range(0, 400).map('item + 1').length"
        assert resolve_value(heavy, ctx) == 400
        with pytest.raises(Exception, match="evaluation steps"):
            render_template(f"{heavy} {heavy} {heavy}", ctx)

    async def test_evaluation_runs_off_the_event_loop(self, ctx: ExpressionContext) -> None:
        loop_thread = threading.get_ident()

        def where(_text: str, _ctx: ExpressionContext) -> int:
            return threading.get_ident()

        assert await evaluate_off_loop(where, "$x", ctx) != loop_thread
        # The loop keeps serving while an evaluation runs.
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        value = await evaluate_off_loop(
            evaluate_single, "$range(0, 50000).map('item * 2').length", ctx
        )
        task.cancel()
        assert value == 50000
        assert ticks > 1


class TestInlineSlice:
    async def test_light_evaluation_stays_on_the_loop(self, ctx: ExpressionContext) -> None:
        where: list[int] = []

        def light() -> Any:
            where.append(threading.get_ident())
            return evaluate_single("$data.list.map('item * 2')", ctx)

        assert await evaluate_soon(light) == [6, 2, 4]
        assert where == [threading.get_ident()]  # no hop: one run, on this thread

    async def test_heavy_evaluation_moves_to_the_pool_and_starts_over(
        self, ctx: ExpressionContext
    ) -> None:
        where: list[int] = []

        def heavy() -> Any:
            where.append(threading.get_ident())
            return evaluate_single("$range(0, 20000).map('item + 1').length", ctx)

        assert await evaluate_soon(heavy) == 20000
        # Tried inline, outgrew the slice, computed again from the start on the pool.
        assert where[0] == threading.get_ident()
        assert len(where) == 2
        assert where[1] != threading.get_ident()

    def test_the_slice_signal_passes_every_evaluator_fallback(self, ctx: ExpressionContext) -> None:
        # Conditions turn every error into False and spans fall back to null: the slice
        # signal must still come out, or the loop would keep the heavy work.
        with pytest.raises(NeedsThread), inline_slice(InlineSlice(steps=100)):
            evaluate_condition("$range(0, 5000).map('item').length > 0", ctx)
        with pytest.raises(NeedsThread), inline_slice(InlineSlice(steps=100)):
            render_template("a $range(0, 5000).map('item').length b", ctx)

    def test_cpu_time_bounds_the_slice_whatever_the_steps(self, ctx: ExpressionContext) -> None:
        # The thread clock is first read at the first check, then every few hundred steps:
        # work that stays under the step bound still leaves the loop once its CPU is spent.
        many_steps = InlineSlice(steps=10**9, cpu_seconds=0.002, built=10**9)
        with pytest.raises(NeedsThread), inline_slice(many_steps):
            evaluate_single("$range(0, 50000).map('item + 1').length", ctx)
        assert many_steps.steps > 0  # not the step bound


class TestResultSizes:
    @pytest.mark.timeout(20)
    @pytest.mark.parametrize(
        "expr",
        [
            '$("%10000001d" % 1).length',
            '$("%.10000001f" % 1.0)',
            '$"%2000000000d" % 1',
            '$"%*d" % (2000000000, 1)',
            '$("a" * 100000).replace("a", "b" * 101)',
            '$replace("a" * 100000, "a", "b" * 101)',
            '$join("x" * 100000, range(102))',
            '$range(102).join("x" * 100000)',
            '$concat("x" * 3000000, "y" * 3000000)',
            '$("ab" * 60000).split("")',
            '$split("a," * 150000, ",")',
            '$regexReplace("a" * 100000, "", "x" * 100)',
            '$("a" * 100000).regexReplace("a", "bb" * 30)',
            '$"x" * 5000000',
            '$["x"] * 200000',
            "$range(0, 50).map(\"'a' * 1000000\").length",
            '$list("a" * 200000)',
        ],
    )
    def test_every_builder_is_bounded(self, ctx: ExpressionContext, expr: str) -> None:
        with pytest.raises(ExpressionSizeLimitError):
            evaluate_single(expr, ctx)

    def test_ordinary_formatting_still_works(self, ctx: ExpressionContext) -> None:
        assert evaluate_single('$"%05.1f|%-4s|%x|%%" % (3.14159, "ab", 255)', ctx) == (
            "003.1|ab  |ff|%"
        )
        assert evaluate_single('$"%(name)s is %(n)d" % {"name": "Ada", "n": 36}', ctx) == (
            "Ada is 36"
        )
        assert evaluate_single('$"%s" % [1, None, True]', ctx) == "[1, null, true]"
        assert evaluate_single('$"a-b-c".replace("-", "+")', ctx) == "a+b+c"
        assert evaluate_single('$join(", ", ["a", None, 2])', ctx) == "a, , 2"


class TestNoPythonRepr:
    @pytest.mark.parametrize(
        "expr",
        [
            '$"%s" % hash',
            '$"%s" % str',
            "$f'{hash!r}'",
            "$str(hash)",
            '$"%s" % {"a": True, "b": None}',
            "$concat(hash, Date)",
            "$join(', ', [hash, 1])",
            "$[1, 2].join(hash)",
        ],
    )
    def test_functions_never_print_as_python_objects(
        self, ctx: ExpressionContext, expr: str
    ) -> None:
        value = evaluate_single(expr, ctx)
        text = msgspec.json.encode(value).decode()
        for marker in ("<function", "<built-in", " at 0x", "<lambda>", "True", "None", "{'"):
            assert marker not in text, (expr, value)

    def test_repr_conversions_are_refused(self, ctx: ExpressionContext) -> None:
        with pytest.raises(ExpressionFunctionError, match="%r is not supported"):
            evaluate_single('$"%r" % hash', ctx)

    @pytest.mark.parametrize("expr", ["$1j", "$(1 + 2j)", "$...", "$b'x' * 3"])
    def test_foreign_python_values_never_become_results(
        self, ctx: ExpressionContext, expr: str
    ) -> None:
        value = evaluate_single(expr, ctx)
        assert value is None

    @pytest.mark.parametrize(
        ("expr", "expected"),
        [
            ("$float('nan')", None),
            ("$float('inf')", None),
            ("$'\\ud800x'", "\ufffdx"),
            ("$str(float('inf'))", "Infinity"),
        ],
    )
    def test_every_result_can_be_encoded(
        self, ctx: ExpressionContext, expr: str, expected: Any
    ) -> None:
        value = evaluate_single(expr, ctx)
        assert value == expected
        msgspec.json.encode(value)
