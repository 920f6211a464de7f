"""Methods on strings, arrays, objects and scalars, and key collisions (spec §3.2)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from libs.expressions import ExpressionContext, build_context, evaluate_single
from libs.expressions._attributes import method_names
from libs.expressions._dates import DotDateTime

pytestmark = pytest.mark.unit


def _eval(text: str, **names: Any) -> Any:
    return evaluate_single(text, build_context({}, names, random_seed=5))


class TestStrings:
    @pytest.mark.parametrize(
        ("expr", "expected"),
        [
            ("$s.length", 11),
            ("$s.upper()", "HELLO WORLD"),
            ("$s.toUpperCase()", "HELLO WORLD"),
            ("$s.lower()", "hello world"),
            ("$s.toLowerCase()", "hello world"),
            ("$p.strip()", "pad"),
            ("$p.trim()", "pad"),
            ("$s.capitalize()", "Hello world"),
            ("$s.title()", "Hello World"),
            ("$s.substring(0, 5)", "Hello"),
            ("$s.substring(6)", "World"),
            ("$s.substr(6, 3)", "Wor"),
            ("$s.substr(-5, 2)", "Wo"),
            ("$s.charAt(4)", "o"),
            ("$s.charAt(99)", ""),
            ("$s.indexOf('World')", 6),
            ("$s.indexOf('nope')", -1),
            ("$s.contains('lo W')", True),
            ("$s.startswith('Hell')", True),
            ("$s.startsWith('World')", False),
            ("$s.endswith('ld')", True),
            ("$s.endsWith('ld')", True),
            ("$s.replace('o', '0')", "Hell0 W0rld"),
            ("$s.replaceAll('l', 'L')", "HeLLo WorLd"),
            ("$s.regexReplace('[aeiou]', '*')", "H*ll* W*rld"),
            ("$s.regexReplace('\\d', '#')", "Hello World"),
            ("$c.split(',')", ["a", "b", "c"]),
            ("$s.split()", ["Hello", "World"]),
            ("$c.split('')", ["a", ",", "b", ",", "c"]),
            ("$s.reverse()", "dlroW olleH"),
            ("$s.toString()", "Hello World"),
            ("$u.urlEncode()", "a%20b%26c%3Dd%2F%C3%A9"),
            ("$e.urlDecode()", "a b&c"),
            ("$q.escape()", '"say \\"hi\\"\\n"'),
            ("$j.unescape()", 'say "hi"\n'),
            ("$s.to_upper_case()", "HELLO WORLD"),
        ],
    )
    def test_method(self, expr: str, expected: Any) -> None:
        names = {
            "s": "Hello World",
            "p": "  pad \n",
            "c": "a,b,c",
            "u": "a b&c=d/é",
            "e": "a%20b%26c",
            "q": 'say "hi"\n',
            "j": '"say \\"hi\\"\\n"',
        }
        assert _eval(expr, **names) == expected

    def test_hash_is_md5_hex(self) -> None:
        assert _eval("$s.hash()", s="abc") == hashlib.md5(b"abc").hexdigest()

    def test_escape_round_trips(self) -> None:
        assert _eval("$s.escape().unescape()", s='tab\t"q"') == 'tab\t"q"'

    def test_chaining_keeps_methods_available(self) -> None:
        assert _eval("$s.split(' ').first().upper().length", s="ab cd") == 2

    def test_unknown_method_is_null(self) -> None:
        assert _eval("$s.frobnicate()", s="x") is None

    def test_python_format_is_not_reachable(self) -> None:
        assert _eval("$s.format(1)", s="{0.__class__}") is None


class TestArrays:
    @pytest.mark.parametrize(
        ("expr", "expected"),
        [
            ("$n.length", 5),
            ("$n.first()", 3),
            ("$n.last()", 2),
            ("$empty.first()", None),
            ("$n.reverse()", [2, 3, 1, 1, 3]),
            ("$nested.flat()", [1, 2, [3, [4]], 5]),
            ("$nested.flat(2)", [1, 2, 3, [4], 5]),
            ("$n.distinct()", [3, 1, 2]),
            ("$withNull.notNull()", [1, 2]),
            ("$n.add(9)", [3, 1, 1, 3, 2, 9]),
            ("$n.contains(2)", True),
            ("$n.contains(7)", False),
            ("$n.join('-')", "3-1-1-3-2"),
            ("$n.join()", "3,1,1,3,2"),
            ("$withNull.join('|')", "1||2"),
            ("$n.filter('item > 1')", [3, 3, 2]),
            ("$n.map('item * 10')", [30, 10, 10, 30, 20]),
            ("$n.sort()", [1, 1, 2, 3, 3]),
            ("$n.sort('item', 'desc')", [3, 3, 2, 1, 1]),
            ("$n.take(2)", [3, 1]),
            ("$n.take(-2)", [3, 2]),
            ("$n.toString()", "[3, 1, 1, 3, 2]"),
            ("$n[1]", 1),
            ("$n[-1]", 2),
            ("$n[99]", None),
            ("$n[1:3]", [1, 1]),
            ("$n.indexOf(2)", 4),
        ],
    )
    def test_method(self, expr: str, expected: Any) -> None:
        names = {
            "n": [3, 1, 1, 3, 2],
            "empty": [],
            "nested": [1, [2, [3, [4]]], 5],
            "withNull": [1, None, 2],
        }
        assert _eval(expr, **names) == expected

    def test_object_items(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$users.filter('item.active').map('item.name')", ctx) == [
            "Ann",
            "Cid",
        ]
        assert evaluate_single("$users.sort('item.age').map('item.name')", ctx) == [
            "Bob",
            "Ann",
            "Cid",
        ]
        assert evaluate_single("$users.sort('item.age', 'desc').first().name", ctx) == "Cid"
        assert evaluate_single("$users.distinctBy('item.id').length", ctx) == 2

    def test_sort_puts_missing_keys_last_both_ways(self) -> None:
        rows = [{"v": 2}, {}, {"v": 1}]
        assert _eval("$r.sort('item.v')", r=rows) == [{"v": 1}, {"v": 2}, {}]
        assert _eval("$r.sort('item.v', 'desc')", r=rows) == [{"v": 2}, {"v": 1}, {}]

    def test_sort_of_incomparable_keys_keeps_order(self) -> None:
        assert _eval("$r.sort()", r=[2, "a", 1]) == [2, "a", 1]

    def test_random_picks_an_element(self) -> None:
        assert _eval("$r.random()", r=[4, 5, 6]) in (4, 5, 6)
        assert _eval("$r.random()", r=[]) is None

    def test_item_expressions_see_the_context(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$users.filter('item.age > a.score * 4').length", ctx) == 2
        assert evaluate_single("$users.filter('item.age > $b.score * 4').length", ctx) == 1

    def test_concat_resolves_quoted_item_paths(self, ctx: ExpressionContext) -> None:
        expr = "$users.map(\"concat('item.name', ' is ', 'item.age')\")"
        assert evaluate_single(expr, ctx) == ["Ann is 31", "Bob is 25", "Cid is 40"]

    def test_text_patterns_fill_in_item_paths(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$users.map('- item.name (item.age)').first()", ctx) == (
            "- Ann (31)"
        )
        assert evaluate_single("$users.map('item.name: item.id').last()", ctx) == "Cid: 1"

    def test_nested_maps(self, ctx: ExpressionContext) -> None:
        expr = "$users.take(2).map(\"cfg.keys().map('item.upper()')\")"
        assert evaluate_single(expr, ctx) == [["A", "B"], ["A", "B"]]

    def test_failing_item_expression_is_null(self) -> None:
        assert _eval("$r.map('item.x.y + 1')", r=[{"x": None}]) == [None]


class TestObjects:
    def test_iteration_methods(self, ctx: ExpressionContext) -> None:
        # Spec §9.2 item 18.
        assert evaluate_single("$row.keys()", ctx) == ["colA", "colB", "colC"]
        assert evaluate_single("$row.values()", ctx) == ["foo", "bar", None]
        assert evaluate_single("$cfg.entries()", ctx) == [
            {"key": "a", "value": 1},
            {"key": "b", "value": 2},
        ]
        assert evaluate_single("$row.map('item.value')", ctx) == ["foo", "bar", None]
        assert evaluate_single("$row.filter('item.value != null').map('item.key')", ctx) == [
            "colA",
            "colB",
        ]
        expr = "$row.map(\"concat('item.key', '=', 'item.value')\")"
        assert evaluate_single(expr, ctx) == ["colA=foo", "colB=bar", "colC="]

    def test_get_length_and_to_string(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$cfg.get('a')", ctx) == 1
        assert evaluate_single("$cfg.get('zz')", ctx) is None
        assert evaluate_single("$cfg.get('zz', 'dflt')", ctx) == "dflt"
        assert evaluate_single("$cfg.length", ctx) == 2
        assert evaluate_single("$cfg.toString()", ctx) == '{"a": 1, "b": 2}'
        assert evaluate_single("$cfg.items()", ctx) == [["a", 1], ["b", 2]]

    def test_entries_stay_objects_with_methods(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$cfg.entries().first().get('key')", ctx) == "a"
        assert evaluate_single("$cfg.values().first().toString()", ctx) == "1"
        assert evaluate_single("$cfg.keys().first().upper()", ctx) == "A"

    @pytest.mark.parametrize(
        ("expr", "expected"),
        [
            ("$data.items", "from-json-key"),
            ("$node.keys", [10, 20]),
            ("$node.values", {"a": 1}),
            ("$node.entries", "e"),
            ("$node.map", "m"),
            ("$node.filter", "f"),
        ],
    )
    def test_json_keys_win_over_methods(
        self, ctx: ExpressionContext, expr: str, expected: Any
    ) -> None:
        assert evaluate_single(expr, ctx) == expected

    def test_a_length_key_wins_over_the_property(self) -> None:
        assert _eval("$video.length", video={"length": 93}) == 93

    def test_bracket_access_with_odd_keys(self, ctx: ExpressionContext) -> None:
        assert evaluate_single('$userInput.headers["user-agent"]', ctx) == "UA-test"
        assert evaluate_single("$userInput.headers['missing']", ctx) is None

    def test_keyword_named_keys(self) -> None:
        assert _eval("$mail.from", mail={"from": "a@b.c"}) == "a@b.c"
        assert _eval("$mail.class.upper()", mail={"class": "x"}) == "X"


class TestScalars:
    def test_to_string(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$data.count.toString()", ctx) == "5"
        assert evaluate_single("$data.price.toString()", ctx) == "2.5"
        assert evaluate_single("$data.active.toString()", ctx) == "true"
        assert evaluate_single("$data.list.length.toString()", ctx) == "3"

    def test_length_with_parentheses_reads_the_property(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$data.list.length()", ctx) == 3


class TestFallbackPaths:
    """Paths the sandbox rejects are walked by the fallback resolver (spec §3.2)."""

    def test_numeric_segment_indexes_a_list(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$data.list.0", ctx) == 3
        assert evaluate_single("$data.list.0.toString()", ctx) == "3"

    def test_property_called_like_a_method(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$data.list.length().toString()", ctx) == "3"
        assert evaluate_single('$userInput.headers["user-agent"].length()', ctx) == 7

    def test_method_arguments_may_be_paths_or_literals(self, ctx: ExpressionContext) -> None:
        assert evaluate_single("$cfg.get(row.colA, 'x').length()", ctx) == 1
        assert evaluate_single("$data.list.0.missing.deeper()", ctx) is None


def test_documented_methods_exist() -> None:
    strings = {"upper", "lower", "strip", "trim", "capitalize", "title", "toUpperCase"}
    strings |= {"substring", "substr", "charAt", "indexOf", "contains", "startswith"}
    strings |= {"endswith", "replace", "replaceAll", "regexReplace", "split", "hash"}
    strings |= {"urlEncode", "urlDecode", "escape", "unescape", "reverse", "toString"}
    arrays = {"first", "last", "random", "reverse", "flat", "distinct", "distinctBy"}
    arrays |= {"notNull", "add", "contains", "join", "filter", "map", "sort", "take"}
    objects = {"get", "keys", "values", "entries", "map", "filter", "toString"}
    dates = {"format", "toISO", "toDate", "toTime", "toUnix", "toMillis", "addDays"}
    dates |= {"addHours", "addMinutes", "addMonths", "addYears", "startOfDay", "endOfDay"}
    dates |= {"startOfMonth", "endOfMonth"}
    assert strings <= method_names(str)
    assert arrays | {"toString"} <= method_names(list)
    assert objects <= method_names(dict)
    assert dates <= method_names(DotDateTime)
    assert method_names(int) == method_names(bool) == {"toString", "to_string"}
