"""Span parser, source rewrites and mode classification (spec §3.2-3.4)."""

from __future__ import annotations

import pytest

from libs.expressions import find_spans, has_arithmetic, is_code_like, is_single_expression
from libs.expressions._rewrite import rewrite_code, rewrite_ternary

pytestmark = pytest.mark.unit


def _texts(text: str, *, code: bool = False) -> list[str]:
    return [span.text for span in find_spans(text, code=code)]


class TestSpans:
    def test_dotted_path_with_brackets_and_calls(self) -> None:
        text = 'Hi $u.headers["user-agent"].lower().split(",")[0] now'
        assert _texts(text) == ['$u.headers["user-agent"].lower().split(",")[0]']

    def test_span_offsets_match_source(self) -> None:
        text = "a $x.y b"
        (span,) = find_spans(text)
        assert (span.start, span.end) == (2, 6)
        assert text[span.start : span.end] == span.text

    def test_quotes_inside_groups_are_respected(self) -> None:
        assert _texts('$a.get("x)y").b rest') == ['$a.get("x)y").b']

    def test_mixed_brackets_nest(self) -> None:
        assert _texts("$f([1, (2)], {'k': [3]}) end") == ["$f([1, (2)], {'k': [3]})"]

    def test_nested_dollar_is_part_of_the_outer_span(self) -> None:
        assert _texts("$range(1, int($n.x)) tail") == ["$range(1, int($n.x))"]

    def test_trailing_full_stop_is_text(self) -> None:
        assert _texts("Hello $user.name.") == ["$user.name"]

    def test_dollar_must_be_followed_by_a_letter(self) -> None:
        assert _texts("costs $100 or $ 5 or $_x") == []

    def test_unbalanced_group_ends_the_span_before_it(self) -> None:
        assert _texts("call $fn(unclosed text") == ["$fn"]

    def test_several_spans_in_order(self) -> None:
        assert _texts("$a.x and $b.y, $c") == ["$a.x", "$b.y", "$c"]

    def test_template_mode_ignores_apostrophes(self) -> None:
        assert _texts("Don't forget $name's cake") == ["$name"]

    def test_code_mode_skips_string_literals(self) -> None:
        assert _texts('$a.replace("$b", x) + $c', code=True) == ['$a.replace("$b", x)', "$c"]
        assert _texts('"$inside" + $outside', code=True) == ["$outside"]


class TestRewrites:
    def test_ternary(self) -> None:
        assert rewrite_ternary("x > 0 ? 'pos' : 'neg'") == "('pos') if (x > 0) else ('neg')"

    def test_nested_ternary_in_both_branches(self) -> None:
        assert rewrite_ternary("a ? b ? 1 : 2 : 3") == "((1) if (b) else (2)) if (a) else (3)"
        assert rewrite_ternary("a ? 1 : b ? 2 : 3") == "(1) if (a) else ((2) if (b) else (3))"

    def test_ternary_ignores_quoted_and_bracketed_marks(self) -> None:
        assert rewrite_ternary("f('a?b:c')") == "f('a?b:c')"
        assert rewrite_ternary("{'k': 1}") == "{'k': 1}"

    def test_logical_operators_outside_strings_only(self) -> None:
        assert rewrite_code("a && 'x&&y' || b") == "a  and  'x&&y'  or  b"

    def test_keyword_names_are_aliased(self) -> None:
        assert rewrite_code("global.x + mail.from") == "_kw_global.x + mail._kw_from"
        assert rewrite_code("'global'") == "'global'"

    def test_invalid_escapes_are_kept_literally(self) -> None:
        assert rewrite_code(r"'\d+' + '\n'") == r"'\\d+' + '\n'"
        assert rewrite_code(r"r'\d'") == r"r'\d'"

    def test_optional_chaining_is_plain_access(self) -> None:
        assert rewrite_code("a?.b?.[0]") == "a.b[0]"


class TestClassification:
    @pytest.mark.parametrize(
        "text",
        [
            "$input.text",
            "$llm.text.upper()",
            "$node.headers['x-api-key']",
            "$input.count + 1",
            "$x > 0 ? 'pos' : 'neg'",
            "$a.n > 0 ? $a.x : $b.y",
            '${"name": "Ali"}',
            "$'## Record ' + str(r.id)",
            "  $padded.value  ",
        ],
    )
    def test_single_expressions(self, text: str) -> None:
        assert is_single_expression(text)

    @pytest.mark.parametrize(
        "text",
        ["Hello $input.name", "$input.name suffix", "$a.x and $b.y", "just text", "", "$100", "$"],
    )
    def test_not_single_expressions(self, text: str) -> None:
        assert not is_single_expression(text)

    @pytest.mark.parametrize("text", ["$a.count + 1", "$a.x - $b.y", "$a % 2", "$a.b*3"])
    def test_arithmetic(self, text: str) -> None:
        assert has_arithmetic(text)

    @pytest.mark.parametrize("text", ["$a.x and $b.y", "- $a\n- $b", "Price: $x", "$a > $b"])
    def test_not_arithmetic(self, text: str) -> None:
        assert not has_arithmetic(text)

    @pytest.mark.parametrize(
        "text", ["int($x)", "items[$i]", "max(1, $x)", "1 + $n", "$a != $b", "$a && $b"]
    )
    def test_code_like(self, text: str) -> None:
        assert is_code_like(text)

    @pytest.mark.parametrize("text", ["$a and $b", "Price: $x", "$a, $b", "no refs"])
    def test_natural_language(self, text: str) -> None:
        assert not is_code_like(text)
