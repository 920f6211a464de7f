"""Heuristics that pick the evaluation mode of a field value (spec §3.3-3.4)."""

from __future__ import annotations

import re

from libs.expressions._rewrite import has_top_level_ternary
from libs.expressions._sandbox import parses
from libs.expressions._scanner import Span, find_spans, nesting_depth_at, split_segments

_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
# Operators that make text between references code rather than prose; bare `and` / `or`
# are deliberately absent so "$a.x and $b.y" stays a sentence.
_SYMBOLIC_OPERATOR_RE = re.compile(r"!=|==|<=|>=|&&|\|\||[<>+\-*/%?]")
_ARITHMETIC_OPERATORS = frozenset("+-*/%")
_PROBE_NAME = "_heym_probe"
_WORD_RE = re.compile(r"[A-Za-z_]\w*")
_CODE_WORDS = frozenset(
    {_PROBE_NAME, "and", "or", "not", "in", "is", "if", "else", "true", "false", "null"}
    | {"None", "True", "False", "undefined"}
)


def _probe(text: str, spans: list[Span]) -> str:
    """``text`` with every span replaced by a plain name, leaving only the glue."""
    parts: list[str] = []
    last = 0
    for span in spans:
        parts.append(text[last : span.start])
        parts.append(_PROBE_NAME)
        last = span.end
    parts.append(text[last:])
    return "".join(parts)


def is_single_expression(text: str) -> bool:
    """True when the whole trimmed value is one `$` expression (typed result).

    That is one span covering everything (`$a.b[0].c()`), or `$` + one parseable
    expression without further references (`$a.count + 1`, `${"k": v}`,
    `$x > 0 ? 'p' : 'n'`), or a top-level ternary whose branches are references.
    Currency like `$100` is not an expression.
    """
    trimmed = text.strip()
    if not trimmed.startswith("$"):
        return False
    body = trimmed[1:].strip()
    if not body or _NUMBER_RE.fullmatch(body):
        return False
    spans = find_spans(trimmed)
    if len(spans) == 1 and spans[0].start == 0 and spans[0].end == len(trimmed):
        return True
    nested = find_spans(body, code=True)
    if not nested:
        return parses(body)
    probe = _probe(body, nested)
    return has_top_level_ternary(probe) and parses(probe)


def has_arithmetic(text: str) -> bool:
    """True when some `$` span is directly followed by ``+ - * / %`` (spec §3.3)."""
    for span in find_spans(text):
        # Only spaces and tabs may sit between: "- $a\n- $b" is a markdown list.
        rest = text[span.end :].lstrip(" \t")
        if rest[:1] in _ARITHMETIC_OPERATORS:
            return True
    return False


def is_code_like(text: str) -> bool:
    """True for code-like `$` usage (`int($x)`, `$a != $b`, `$a && $b`, `1 + $n`).

    A reference inside brackets, or references joined only by operators into something
    that parses, is code; `$a and $b` or `Price: $x` is a text template.
    """
    trimmed = text.strip()
    spans = find_spans(trimmed, code=True)
    if not spans:
        return False
    if any(nesting_depth_at(trimmed, span.start) > 0 for span in spans):
        return True
    probe = _probe(trimmed, spans)
    glue = "".join(chunk for is_string, chunk in split_segments(probe) if not is_string)
    return bool(_SYMBOLIC_OPERATOR_RE.search(glue)) and parses(probe)


def has_prose_words(text: str) -> bool:
    """True when words other than keywords and literals sit between the `$` spans.

    "$a.count + 1" is all code; "$user.name - boss" has the word "boss", so when it
    fails as arithmetic it reads as a sentence rather than a broken expression.
    """
    trimmed = text.strip()
    probe = _probe(trimmed, find_spans(trimmed, code=True))
    glue = " ".join(chunk for is_string, chunk in split_segments(probe) if not is_string)
    return any(word not in _CODE_WORDS for word in _WORD_RE.findall(glue))
