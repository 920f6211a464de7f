"""Property: any expression terminates within its budget with a value or a clear error.

Expressions are generated from the language's own grammar (literals, references into a
context, the built-in functions and methods, operators, comprehensions, f-strings, ternaries,
templates around `$` spans), with hostile values mixed in (huge widths and counts,
catastrophic regexes, NUL, lone surrogates, quotes). For every one, `resolve_value` returns
a JSON-encodable value without a Python repr in it, or raises an `ExpressionError`: never
any other exception, never a hang.
"""

from __future__ import annotations

import re
import time
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libs.expressions import ExpressionError, _budget, build_context, resolve_value
from libs.expressions._budget import Limits
from tests.fuzz.conftest import examples

pytestmark = pytest.mark.unit

# A smaller budget than production keeps 10,000 inputs well under a minute; the property
# (stops within the budget, never another exception) is the same at any size.
LIMITS = Limits(steps=20_000, seconds=0.25, chars=200_000, items=20_000, total=1_000_000)
# Termination is asserted generously (GC pauses, a loaded CI machine): a hang is the failure.
SLACK_S = 10.0
REPR = re.compile(r"<(?:function|built-in|bound|class|lambda|module|method)\b|object at 0x")

CONTEXT = build_context(
    {"userInput": {"text": "héllo wörld", "n": 7, "items": [3, 1, 2], "q": "a'b\"c"}},
    {
        "data": {"list": [1, 2, 3], "meta": {"k": "v"}, "none": None, "s": "x" * 50},
        "rows": [{"name": "Ann", "age": 31}, {"name": "Bob", "age": None}],
    },
    vars={"counter": 3},
    now=None,
    random_seed=1,
)

NAMES = [
    "userInput.text",
    "userInput.n",
    "userInput.items",
    "userInput.q",
    "data.list",
    "data.meta",
    "data.none",
    "data.s",
    "rows",
    "vars.counter",
    "now",
    "input",
    "missing.path",
    "hash",
    "str",
    "Date",
    "UUID",
]
FUNCTIONS = [
    "str", "int", "float", "bool", "list", "len", "abs", "min", "max", "round", "sum",
    "sorted", "array", "range", "notNull", "upper", "lower", "strip", "capitalize", "title",
    "split", "join", "replace", "regexReplace", "hash", "concat", "Date", "randomInt", "dict",
]  # fmt: skip
METHODS = [
    "upper()", "lower()", "trim()", "length", "reverse()", "toString()", "first()",
    "last()", "distinct()", "flat(3)", "keys()", "values()", "entries()", "urlEncode()",
    "escape()", "unescape()", "hash()", "split('')", "split(',')", "join('-')",
    "map('item')", "map('item * 2')", "filter('item')", "sort()", "take(2)",
    "replace('a', 'bb')", "regexReplace('(a+)+$', 'x')", "regexReplace('', '--')",
    "format('YYYY [at] HH:mm')", "addDays(1e12)", "charAt(1)", "substring(1, 3)",
    "contains('a')", "indexOf('l')", "count('l')", "get('k')", "add(1)",
]  # fmt: skip
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "==", "!=", "<", ">", "and", "or"]

HOSTILE_STRINGS = st.sampled_from(
    [
        "",
        "a" * 40 + "!",
        "(a+)+$",
        "%2000000000d",
        "%.100000f",
        "%r",
        "%s %s",
        "\x00",
        "\ud800",
        "'",
        '"',
        "\\",
        "$userInput.text",
        "${",
        "\r\n",
        "é" * 10,
    ]
)
TEXT = st.one_of(HOSTILE_STRINGS, st.text(max_size=20))
INTS = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([10, 100, 1000, 100_000, 10**6, 2**31, 10**30, 2_000_000_000]),
)


def _string_literal(text: str) -> str:
    return repr(text)


LITERALS = st.one_of(
    INTS.map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: f"float('{f}')"),
    TEXT.map(_string_literal),
    st.sampled_from(["None", "null", "true", "false", "[]", "{}", "[1, [2, [3]]]", "1j", "..."]),
)
ATOMS = st.one_of(LITERALS, st.sampled_from(NAMES))


def _expressions(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from(OPERATORS), children).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        st.tuples(st.sampled_from(FUNCTIONS), st.lists(children, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        st.tuples(children, st.sampled_from(METHODS)).map(lambda t: f"({t[0]}).{t[1]}"),
        st.tuples(children, children).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        st.tuples(children, children).map(lambda t: f"[x * 2 for x in {t[0]} if {t[1]}]"),
        children.map(lambda c: f"f'{{{c}}}!'"),
        st.tuples(TEXT, children).map(lambda t: f"{_string_literal(t[0])} % {t[1]}"),
    )


EXPRESSIONS = st.recursive(ATOMS, _expressions, max_leaves=8)
FIELD_VALUES = st.one_of(
    EXPRESSIONS.map(lambda e: f"${e}"),
    st.tuples(TEXT, EXPRESSIONS, TEXT).map(lambda t: f"{t[0]} ${t[1]} {t[2]}"),
    st.tuples(EXPRESSIONS, EXPRESSIONS).map(lambda t: f"${t[0]} + ${t[1]}"),
    st.tuples(st.sampled_from(NAMES), TEXT).map(lambda t: f"Hi ${t[0]}, {t[1]}"),
)


def _check_plain(value: Any) -> None:
    encoded = msgspec.json.encode(value).decode()  # raises for anything not JSON
    assert not REPR.search(encoded), encoded[:300]


@settings(max_examples=examples(10_000, 200_000))
@given(FIELD_VALUES)
def test_any_expression_ends_within_budget_with_a_value_or_a_clear_error(text: str) -> None:
    _budget.LIMITS, saved = LIMITS, _budget.LIMITS
    started = time.monotonic()
    try:
        try:
            value = resolve_value(text, CONTEXT)
        except ExpressionError:
            return
        _check_plain(value)
    finally:
        _budget.LIMITS = saved
        elapsed = time.monotonic() - started
        assert elapsed < LIMITS.seconds + SLACK_S, (text, elapsed)
