"""Source rewrites that turn JS-flavoured expression text into parseable Python."""

from __future__ import annotations

import re
from functools import lru_cache

from libs.expressions._scanner import QUOTES, skip_string, split_segments

# Python keywords that can only be names or attribute names in this language (`$global.x`,
# `$mail.from`). They are renamed before parsing and mapped back when looked up.
ALIASED_KEYWORDS = frozenset(
    {
        "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "except", "finally", "from", "global", "import", "nonlocal", "pass",
        "raise", "return", "try", "while", "with", "yield",
    }
)  # fmt: skip
KEYWORD_ALIAS_PREFIX = "_kw_"
_KEYWORD_RE = re.compile(r"\b(" + "|".join(sorted(ALIASED_KEYWORDS)) + r")\b")
# Escapes Python understands; any other backslash pair is kept literally by Python but
# warned about, so it is doubled up front (same value, no warning).
_VALID_ESCAPES = frozenset("\n\\'\"abfnrtv01234567xNuU")
_PREFIX_RE = re.compile(r"[A-Za-z]{1,2}$")
_OPENERS = "([{"
_CLOSERS = ")]}"


def unalias(name: str) -> str:
    """Map a renamed keyword (``_kw_global``) back to the name the user wrote."""
    if name.startswith(KEYWORD_ALIAS_PREFIX):
        original = name[len(KEYWORD_ALIAS_PREFIX) :]
        if original in ALIASED_KEYWORDS:
            return original
    return name


def _fix_escapes(literal: str, prefix: str) -> str:
    lowered = prefix.lower()
    if "r" in lowered or "b" in lowered:
        return literal
    out: list[str] = []
    i = 0
    n = len(literal)
    while i < n:
        ch = literal[i]
        if ch == "\\" and i + 1 < n:
            nxt = literal[i + 1]
            out.append("\\\\" if nxt not in _VALID_ESCAPES else "\\")
            out.append(nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _rewrite_code_chunk(chunk: str) -> str:
    chunk = chunk.replace("&&", " and ").replace("||", " or ")
    return _KEYWORD_RE.sub(lambda m: KEYWORD_ALIAS_PREFIX + m.group(1), chunk)


def _rewrite_tokens(code: str) -> str:
    """Rewrite `&&`, `||`, keywords and string escapes, never touching string contents."""
    out: list[str] = []
    previous_code = ""
    for is_string, chunk in split_segments(code):
        if is_string:
            match = _PREFIX_RE.search(previous_code)
            out.append(_fix_escapes(chunk, match.group(0) if match else ""))
        else:
            previous_code = _rewrite_code_chunk(chunk)
            out.append(previous_code)
    return "".join(out)


def _is_optional_chain(code: str, index: int) -> bool:
    after = code[index + 1 : index + 3]
    return len(after) == 2 and after[0] == "." and (after[1] == "[" or after[1].isalpha())


def _find_top_level(code: str, start: int, target: str) -> int:
    """Index of ``target`` (``?`` or its matching ``:``) at bracket depth 0, or -1."""
    depth = 0
    pending_questions = 0
    i = start
    n = len(code)
    while i < n:
        ch = code[i]
        if ch in QUOTES:
            i = skip_string(code, i)
            continue
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
        elif depth == 0 and ch == "?" and not _is_optional_chain(code, i):
            if target == "?":
                return i
            # A nested ternary inside the true branch owns the next colon.
            pending_questions += 1
        elif depth == 0 and ch == ":" and target == ":":
            if pending_questions == 0:
                return i
            pending_questions -= 1
        i += 1
    return -1


def rewrite_ternary(code: str) -> str:
    """Turn JS ``cond ? a : b`` (nested too) into Python ``(a) if (cond) else (b)``."""
    question = _find_top_level(code, 0, "?")
    if question < 0:
        return code
    colon = _find_top_level(code, question + 1, ":")
    if colon < 0:
        return code
    condition = rewrite_ternary(code[:question].strip())
    truthy = rewrite_ternary(code[question + 1 : colon].strip())
    falsy = rewrite_ternary(code[colon + 1 :].strip())
    return f"({truthy}) if ({condition}) else ({falsy})"


def _drop_optional_chaining(code: str) -> str:
    # `a?.b` behaves like `a.b` here already: a missing key yields null instead of an error.
    out: list[str] = []
    for is_string, chunk in split_segments(code):
        if not is_string:
            chunk = re.sub(r"\?\.(?=\[)|\?(?=\.[A-Za-z_])", "", chunk)
        out.append(chunk)
    return "".join(out)


@lru_cache(maxsize=4096)
def rewrite_code(code: str) -> str:
    """All rewrites needed before handing expression text to the Python parser."""
    return rewrite_ternary(_drop_optional_chaining(_rewrite_tokens(code.strip())))


def has_top_level_ternary(code: str) -> bool:
    """True when ``code`` has a JS ``? :`` outside brackets and strings."""
    question = _find_top_level(code, 0, "?")
    return question >= 0 and _find_top_level(code, question + 1, ":") >= 0
