"""The evaluation modes: single expression, template, condition, arithmetic, and the ladder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from libs.expressions._budget import metered
from libs.expressions._classify import (
    has_arithmetic,
    has_prose_words,
    is_code_like,
    is_single_expression,
)
from libs.expressions._context import ExpressionContext
from libs.expressions._evaluator import Session
from libs.expressions._plain import storable, stringify, to_json, to_plain
from libs.expressions._scanner import find_spans
from libs.expressions.errors import ExpressionError, check_length


@contextmanager
def _about(text: str) -> Iterator[None]:
    """Record which expression failed on engine errors that do not know it yet."""
    try:
        yield
    except ExpressionError as exc:
        exc.with_expression(text)
        raise


# Every public entry point runs under one budget (`metered`): steps, wall clock and sizes
# for the whole call, nested spans and fallbacks included.


def evaluate_single(expr: str, ctx: ExpressionContext, *, preserve_type: bool = True) -> Any:
    """Evaluate a whole value that is one `$` expression.

    With ``preserve_type`` the native (plain) type comes back; without it objects and
    arrays come back as JSON text. A value not starting with `$` is returned unchanged;
    an unresolvable path is None. Raises ExpressionFunctionError for a misused function
    and other ExpressionError subclasses for over-long, too deeply nested or runaway
    expressions.
    """
    with _about(expr), metered():
        check_length(expr)
        trimmed = expr.strip()
        if not trimmed.startswith("$"):
            return expr
        value = to_plain(Session.for_context(ctx).evaluate_span(trimmed))
    if not preserve_type and isinstance(value, dict | list):
        return to_json(value)
    return value


def render_template(
    text: str, ctx: ExpressionContext, *, null_as_empty_single_token: bool = False
) -> str:
    """Replace each `$` span in ``text`` by its string form (objects as JSON).

    A span that resolves to null stays as its literal `$…` text. With
    ``null_as_empty_single_token`` (LLM / agent prompts) a value that is a single token
    (starts with `$`, no whitespace) is evaluated whole and null gives "".
    """
    if "$" not in text:
        return text
    with metered() as budget:
        if (
            null_as_empty_single_token
            and text.startswith("$")
            and not any(c.isspace() for c in text)
        ):
            value = evaluate_single(text, ctx)
            return "" if value is None else stringify(value)
        session = Session.for_context(ctx)
        parts: list[str] = []
        size = 0
        last = 0
        for span in find_spans(text):
            with _about(span.text):
                value = to_plain(session.evaluate_span(span.text))
                shown = span.text if value is None else stringify(value)
                size += span.start - last + len(shown)
                if size > budget.limits.chars:
                    budget.chars(size, "the rendered text")  # raises
            parts.append(text[last : span.start])
            parts.append(shown)
            last = span.end
        parts.append(text[last:])
        return storable("".join(parts))


def evaluate_condition(text: str, ctx: ExpressionContext) -> bool:
    """Evaluate a condition to a bool; any error at all gives False (spec §3.3).

    Spans keep their native values, `&&` / `||` and `c ? a : b` are accepted, and the
    code around the spans sees only null/None/undefined/true/false and
    len/str/int/float/bool.
    """
    try:
        check_length(text)
        with metered():
            return bool(Session.for_condition(ctx).evaluate_code(text))
    except Exception:
        return False


def evaluate_arithmetic(text: str, ctx: ExpressionContext, *, preserve_type: bool = True) -> Any:
    """Evaluate text whose `$` spans are operands (`$a.count + 1`, `int($x) * 2`).

    Spans are substituted with their values and the whole text is evaluated, so numbers
    stay numbers. When that fails, an all-code single expression gives null (e.g. a
    missing operand in `$vars.n + 1`) and anything else renders as a template
    (`$user.name - boss`). Function errors propagate.
    """
    with _about(text), metered():
        check_length(text)
        try:
            value = to_plain(Session.for_context(ctx).evaluate_code(text))
        except ExpressionError:
            raise
        except Exception:
            if is_single_expression(text) and not has_prose_words(text):
                return evaluate_single(text, ctx, preserve_type=preserve_type)
            return render_template(text, ctx)
    if not preserve_type and isinstance(value, dict | list):
        return to_json(value)
    return value


def resolve_value(text: Any, ctx: ExpressionContext) -> Any:
    """The value-resolution ladder used by set / output / variable / mappings (§3.4).

    1. a span followed by an operator: arithmetic; 2. one whole expression: typed
    value; 3. other text with `$`: arithmetic when code-like, else a template;
    4. no `$`: the literal string. Non-string values are returned unchanged.
    """
    if not isinstance(text, str) or "$" not in text:
        return text
    with metered():
        if has_arithmetic(text):
            return evaluate_arithmetic(text, ctx)
        if is_single_expression(text):
            return evaluate_single(text, ctx)
        if is_code_like(text):
            return evaluate_arithmetic(text, ctx)
        return render_template(text, ctx)
