"""Lexical scanning: `$` span discovery, string literals and bracket groups."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

QUOTES = "'\""
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(")]}")
_IDENT_RUN = re.compile(r"\w*")


@dataclass(frozen=True, slots=True)
class Span:
    """One `$…` reference found in a text: ``text == source[start:end]``."""

    start: int
    end: int
    text: str


def is_ident_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def skip_string(text: str, start: int) -> int:
    """Index just past the string literal opening at ``start`` (end of text if unclosed)."""
    quote = text[start]
    i = start + 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        i += 1
    return n


def skip_group(text: str, start: int) -> int | None:
    """Index just past the balanced bracket group opening at ``start``, else None.

    Mixed bracket kinds are tracked on a stack and quoted strings are skipped, so
    ``$a.get("x)")`` and ``$f([1, (2)])`` are each one group.
    """
    stack = [_OPENERS[text[start]]]
    i = start + 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in QUOTES:
            i = skip_string(text, i)
            continue
        if ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch in _CLOSERS:
            if ch != stack[-1]:
                return None
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return None


def _span_end(text: str, i: int) -> int:
    """Extend a span whose identifier starts at ``i`` over dotted names and groups."""
    n = len(text)
    i = _IDENT_RUN.match(text, i).end()  # type: ignore[union-attr]  # \w* always matches
    while i < n:
        ch = text[i]
        if ch in "([":
            after = skip_group(text, i)
            if after is None:
                break
            i = after
            continue
        # A dot only continues the span when a name follows it, so the full stop in
        # "Hello $user.name." stays text instead of being swallowed by the reference.
        if ch == "." and i + 1 < n and is_ident_char(text[i + 1]):
            i = _IDENT_RUN.match(text, i + 1).end()  # type: ignore[union-attr]
            continue
        break
    return i


def find_spans(text: str, *, code: bool = False) -> list[Span]:
    """All `$name…` spans in ``text``, left to right.

    A span starts at ``$`` followed by a letter. In ``code`` mode quoted string literals
    are skipped (a ``$`` inside quotes is data); in template mode quotes are ordinary
    text, because prose such as "Don't forget $name" has unpaired apostrophes.
    """
    if "$" not in text:
        return []
    return list(_find_spans(text, code))


# Field texts repeat on every run of a node, and the mode heuristics scan them twice.
@lru_cache(maxsize=4096)
def _find_spans(text: str, code: bool) -> tuple[Span, ...]:
    spans: list[Span] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if code and ch in QUOTES:
            i = skip_string(text, i)
            continue
        if ch == "$" and i + 1 < n and text[i + 1].isalpha():
            end = _span_end(text, i + 1)
            spans.append(Span(i, end, text[i:end]))
            i = end
            continue
        i += 1
    return tuple(spans)


def split_segments(code: str) -> list[tuple[bool, str]]:
    """Split code into ``(is_string_literal, chunk)`` pieces, in order."""
    pieces: list[tuple[bool, str]] = []
    i = 0
    last = 0
    n = len(code)
    while i < n:
        if code[i] in QUOTES:
            if i > last:
                pieces.append((False, code[last:i]))
            end = skip_string(code, i)
            pieces.append((True, code[i:end]))
            i = last = end
            continue
        i += 1
    if last < n:
        pieces.append((False, code[last:]))
    return pieces


def nesting_depth_at(code: str, index: int) -> int:
    """Bracket nesting depth of position ``index`` in code, ignoring string contents."""
    depth = 0
    i = 0
    while i < index:
        ch = code[i]
        if ch in QUOTES:
            i = skip_string(code, i)
            continue
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth = max(0, depth - 1)
        i += 1
    return depth
