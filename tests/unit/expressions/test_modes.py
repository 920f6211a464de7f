"""Evaluation modes and the value-resolution ladder (spec §3.3-3.4)."""

from __future__ import annotations

import pytest

from libs.expressions import (
    ExpressionContext,
    build_context,
    evaluate_arithmetic,
    evaluate_condition,
    evaluate_single,
    render_template,
    resolve_value,
)

pytestmark = pytest.mark.unit


class TestSingle:
    def test_types_are_preserved(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$data.list", ctx) == [3, 1, 2]
        assert evaluate_single("$data.meta", ctx) == {"key": "val"}
        assert evaluate_single("$data.active", ctx) is True
        assert evaluate_single("$data.count", ctx) == 5
        assert evaluate_single("$data.price", ctx) == 2.5

    def test_without_preserve_type_containers_are_json(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$data.meta", ctx, preserve_type=False) == '{"key": "val"}'
        assert evaluate_single("$data.list", ctx, preserve_type=False) == "[3, 1, 2]"
        assert evaluate_single("$data.count", ctx, preserve_type=False) == 5

    def test_missing_path_is_null(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$data.missing.deeper", ctx) is None
        assert evaluate_single("$nobody.field", ctx) is None

    def test_text_without_dollar_is_returned_unchanged(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("plain", ctx) == "plain"

    def test_whitespace_is_trimmed(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("  $data.count \n", ctx) == 5

    def test_ternary(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$data.count > 3 ? 'big' : 'small'", ctx) == "big"
        assert evaluate_single("$data.count > 9 ? 'big' : 'small'", ctx) == "small"

    def test_ternary_with_reference_branches(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$a.x > 0 ? $a.score : $b.score", ctx) == 7
        assert evaluate_single("$a.x > 5 ? $a.score : $b.score", ctx) == 9

    def test_nested_ternary(self, ctx: ExpressionContext) -> None:
        text = "$data.count > 9 ? 'big' : $data.count > 4 ? 'mid' : 'small'"
        assert evaluate_single(text, ctx) == "mid"

    def test_object_and_list_literals(self, ctx: ExpressionContext) -> None:
        assert evaluate_single('${"name": "Ali", "n": data.count}', ctx) == {"name": "Ali", "n": 5}
        assert evaluate_single("$[data.count, 'x']", ctx) == [5, "x"]

    def test_bare_labels_resolve_inside_an_expression(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$'## Record ' + str(data.count) + '\\n'", ctx) == "## Record 5\n"

    def test_nested_dollar_spans_are_resolved_first(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$range(1, int($userInput.body.text) + 1)", ctx) == [1, 2, 3, 4, 5]
        assert evaluate_single("$cfg.get($a.ok and 'a' or 'b')", ctx) == 1
        assert evaluate_single("$userInput.text.contains($userInput.name.lower())", ctx) is False

    def test_nested_spans_keep_types(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$array($data.meta, $data.list)", ctx) == [{"key": "val"}, [3, 1, 2]]
        assert evaluate_single("$array($now)", ctx) == ["2024-01-15T14:30:05+01:00"]

    def test_dollar_inside_a_string_literal_is_data(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$'cost: $data.count'", ctx) == "cost: $data.count"

    def test_uncalled_zero_argument_method_is_called(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$userInput.name.upper", ctx) == "ADA"

    def test_method_needing_arguments_is_not_a_value(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$userInput.name.replace", ctx) is None

    def test_currency_is_not_an_expression_in_the_ladder(self, ctx: ExpressionContext) -> None:
        assert resolve_value("$100", ctx) == "$100"


class TestTemplate:
    def test_spans_become_text(self, ctx: ExpressionContext) -> None:
        text = "Hi $userInput.name, you have $data.count items at $data.price each."
        assert render_template(text, ctx) == "Hi Ada, you have 5 items at 2.5 each."

    def test_objects_are_json_and_booleans_are_lowercase(self, ctx: ExpressionContext) -> None:
        assert render_template("m=$data.meta l=$data.list a=$data.active", ctx) == (
            'm={"key": "val"} l=[3, 1, 2] a=true'
        )

    def test_null_span_keeps_its_literal_text(self, ctx: ExpressionContext) -> None:
        assert render_template("x=$data.nothing y=$ghost.field", ctx) == (
            "x=$data.nothing y=$ghost.field"
        )

    def test_no_dollar_is_unchanged(self, ctx: ExpressionContext) -> None:
        assert render_template("plain text", ctx) == "plain text"

    def test_dates_render_as_iso(self, ctx: ExpressionContext) -> None:
        assert render_template("at $now", ctx) == "at 2024-01-15T14:30:05+01:00"

    def test_bare_input_renders_the_first_input_as_json(self) -> None:
        ctx = build_context({"src": {"a": 1}}, {})
        assert render_template("in: $input", ctx) == 'in: {"a": 1}'

    def test_single_token_prompt_gives_empty_string_for_null(self, ctx: ExpressionContext) -> None:
        assert render_template("$ghost.text", ctx, null_as_empty_single_token=True) == ""
        assert render_template("$ghost.text", ctx) == "$ghost.text"
        assert render_template("$data.meta", ctx, null_as_empty_single_token=True) == (
            '{"key": "val"}'
        )

    def test_prompt_with_spaces_keeps_null_literal(self, ctx: ExpressionContext) -> None:
        rendered = render_template("Q: $ghost.text", ctx, null_as_empty_single_token=True)
        assert rendered == "Q: $ghost.text"

    def test_two_references_and_bracketed_header(self, ctx: ExpressionContext) -> None:
        # Spec §9.2 item 7.
        text = '$data.meta.key , $userInput.headers["user-agent"]'
        rendered = resolve_value(text, ctx)
        assert isinstance(rendered, str)
        assert "val" in rendered
        assert "UA-test" in rendered


class TestCondition:
    def test_js_logical_operators(self, ctx: ExpressionContext) -> None:
        # Spec §9.2 item 2.
        assert evaluate_condition("$a.ok && $b.y == 3", ctx) is True
        assert evaluate_condition("$a.ok && $b.ok", ctx) is False
        assert evaluate_condition("$b.ok || $a.ok", ctx) is True
        assert evaluate_condition("$b.ok || $data.nothing", ctx) is False

    def test_precedence_of_and_over_or(self, ctx: ExpressionContext) -> None:
        assert evaluate_condition("$a.x == 1 || $b.y == 0 && $a.x == 0", ctx) is True

    def test_operators_inside_string_literals_are_data(self, ctx: ExpressionContext) -> None:
        assert evaluate_condition("$userInput.name + '&&' == 'Ada&&'", ctx) is True

    def test_comparisons_with_literals(self, ctx: ExpressionContext) -> None:
        assert evaluate_condition('$userInput.name == "Ada"', ctx) is True
        assert evaluate_condition("$data.nothing == null", ctx) is True
        assert evaluate_condition("$ghost.x == undefined", ctx) is True
        assert evaluate_condition("not $data.active", ctx) is False

    def test_default_true_and_truthiness(self, ctx: ExpressionContext) -> None:
        assert evaluate_condition("true", ctx) is True
        assert evaluate_condition("$data.list", ctx) is True
        assert evaluate_condition("$data.nothing", ctx) is False

    def test_tiny_builtins(self, ctx: ExpressionContext) -> None:
        assert evaluate_condition("len($data.list) == 3", ctx) is True
        assert evaluate_condition("int($userInput.body.text) > 4", ctx) is True

    def test_context_names_need_a_dollar(self, ctx: ExpressionContext) -> None:
        assert evaluate_condition("data.count == 5", ctx) is False

    @pytest.mark.parametrize("text", ["$@@", "$data.count >", "", "$range(5, 1) == []"])
    def test_any_error_is_false(self, ctx: ExpressionContext, text: str) -> None:
        assert evaluate_condition(text, ctx) is False

    def test_over_length_condition_is_false(self, ctx: ExpressionContext) -> None:
        assert evaluate_condition("true or " * 2000 + "true", ctx) is False


class TestArithmetic:
    def test_numbers_stay_numbers(self, ctx: ExpressionContext) -> None:
        assert evaluate_arithmetic("$data.count + 1", ctx) == 6
        assert evaluate_arithmetic("$data.count * $data.price", ctx) == 12.5
        assert evaluate_arithmetic("$b.score % $a.score", ctx) == 2

    def test_difference_of_lengths_is_a_number(self, ctx: ExpressionContext) -> None:
        # Spec §9.2 item 16: `$a.len - $b.len` is a number, not a bool.
        text = "$a.len.length - $a.len.replace('1', '').length"
        assert resolve_value(text, ctx) == 2
        assert resolve_value("$a.len.length - $a.len.length", ctx) == 0

    def test_int_of_a_reference(self, ctx: ExpressionContext) -> None:
        assert resolve_value("int($userInput.body.text)", ctx) == 5
        assert resolve_value("int($userInput.body.text) * 2", ctx) == 10

    def test_failing_text_falls_back_to_a_template(self, ctx: ExpressionContext) -> None:
        assert resolve_value("$userInput.name - the boss", ctx) == "Ada - the boss"
        assert resolve_value("$userInput.name - boss", ctx) == "Ada - boss"
        assert resolve_value("Total: $data.count + 2 items", ctx) == "Total: 5 + 2 items"

    def test_failing_single_expression_falls_back_to_null(self, ctx: ExpressionContext) -> None:
        assert evaluate_arithmetic("$ghost.n + 1", ctx) is None
        assert resolve_value("$vars.missing * 2", ctx) is None
        # All code, just a type error: a broken expression, not a sentence.
        assert resolve_value("$userInput.name + 'x' - 1", ctx) is None

    def test_json_text_without_preserve_type(self, ctx: ExpressionContext) -> None:
        assert evaluate_arithmetic("$data.list + [4]", ctx, preserve_type=False) == ("[3, 1, 2, 4]")


class TestLadder:
    def test_non_strings_are_returned_unchanged(self, ctx: ExpressionContext) -> None:
        value = {"k": "$data.count"}
        assert resolve_value(value, ctx) is value
        assert resolve_value(7, ctx) == 7

    def test_literal_text(self, ctx: ExpressionContext) -> None:
        assert resolve_value("just text", ctx) == "just text"

    def test_single_expression_is_typed(self, ctx: ExpressionContext) -> None:
        # Spec §9.2 item 15.
        assert resolve_value("$data.list", ctx) == [3, 1, 2]
        assert resolve_value("$data.meta", ctx) == {"key": "val"}
        assert resolve_value("$data.active", ctx) is True
        assert resolve_value("$data.count", ctx) == 5
        assert resolve_value("$undefinedLabel.x", ctx) is None

    def test_templates_give_strings(self, ctx: ExpressionContext) -> None:
        assert resolve_value("Count: $data.count", ctx) == "Count: 5"
        assert resolve_value("$a.x and $b.y", ctx) == "1 and 3"

    def test_code_like_comparisons_are_booleans(self, ctx: ExpressionContext) -> None:
        assert resolve_value("$a.x != $b.y", ctx) is True
        assert resolve_value("$a.score > $b.score", ctx) is False
        assert resolve_value("$a.x == 1 && $b.y == 3", ctx) is True

    def test_reference_inside_brackets_is_code(self, ctx: ExpressionContext) -> None:
        assert resolve_value("max(1, $data.count)", ctx) == 5
        assert resolve_value("[$data.count, $a.x]", ctx) == [5, 1]

    def test_prose_in_brackets_stays_text(self, ctx: ExpressionContext) -> None:
        assert resolve_value("Hello ($userInput.name)", ctx) == "Hello (Ada)"
