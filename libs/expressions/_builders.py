"""Size-checked builders behind `replace`, `regexReplace`, `split`, `join`, `concat`, ...

Each computes (or bounds) the size of its result before building it and charges it to the
evaluation budget. Regular expressions run on RE2, whose matching is linear in the input, so
no pattern can backtrack for minutes (`(a+)+$`); patterns RE2 does not support
(backreferences, lookaround) are a clear error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import re2

from libs.expressions._budget import active
from libs.expressions._plain import stringify
from libs.expressions.errors import ExpressionFunctionError

_MAX_PATTERN = 1_000
_WORDS = re.compile(r"\S+")
# RE2 compiles within a memory budget of its own; 8 MiB covers any reasonable pattern.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 8 << 20


@lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    if len(pattern) > _MAX_PATTERN:
        raise ExpressionFunctionError(
            f"regular expression is {len(pattern)} characters long; the maximum is {_MAX_PATTERN}"
        )
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        raise ExpressionFunctionError(
            f"regular expression {pattern[:80]!r} is invalid or not supported "
            f"(no backreferences or lookaround): {exc}"
        ) from None


def regex_replace(text: str, pattern: Any, replacement: Any) -> str:
    """Every match of ``pattern`` in ``text`` replaced (``\\1`` / ``\\g<name>`` expand)."""
    if not isinstance(pattern, str) or not isinstance(replacement, str):
        raise ExpressionFunctionError("regexReplace needs a pattern and a replacement string")
    budget = active()
    limit = budget.limits.chars
    pieces: list[str] = []
    size = 0
    last = 0
    for match in _regex(pattern).finditer(text):
        budget.spend()
        start, end = match.span()
        expanded = match.expand(replacement) if "\\" in replacement else replacement
        pieces.append(text[last:start])
        pieces.append(expanded)
        size += start - last + len(expanded)
        if size > limit:
            budget.chars(size, "the replaced text")  # raises before anything more is built
        last = end
    pieces.append(text[last:])
    budget.chars(size + len(text) - last, "the replaced text")
    return "".join(pieces)


def replace_all(text: str, old: Any, new: Any) -> str:
    """``text`` with every ``old`` replaced by ``new``, sized before it is built."""
    if not isinstance(old, str) or not isinstance(new, str):
        raise TypeError("replace needs two strings")
    count = len(text) + 1 if old == "" else text.count(old)
    if count:
        active().chars(len(text) + count * (len(new) - len(old)), "the replaced text")
    return text.replace(old, new)


def split_text(text: str, separator: str | None = None) -> list[str]:
    """``text`` split on ``separator`` (every character for ""), the item count checked first."""
    budget = active()
    if separator == "":
        budget.items(len(text), "the split result")
        return list(text)
    if separator is None:
        if len(text) // 2 + 1 > budget.limits.items:
            budget.items(sum(1 for _ in _WORDS.finditer(text)), "the split result")
        return text.split()
    if not isinstance(separator, str):
        raise TypeError("split needs a string separator")
    budget.items(text.count(separator) + 1, "the split result")
    return text.split(separator)


def join_texts(separator: Any, values: Iterable[Any]) -> str:
    """The string forms of ``values`` joined by ``separator`` (null contributes "")."""
    budget = active()
    sep = stringify(separator)
    parts: list[str] = []
    size = -len(sep)
    for value in values:
        part = "" if value is None else stringify(value)
        size += len(sep) + len(part)
        if size > budget.limits.chars:
            budget.chars(size, "the joined text")  # raises before anything more is built
        parts.append(part)
    budget.chars(max(size, 0), "the joined text")
    return sep.join(parts)


def to_list(value: str | list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any]) -> list[Any]:
    active().items(len(value), "the list")
    return list(value)
