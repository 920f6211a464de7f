"""Exceptions raised by the expression engine."""

from __future__ import annotations

MAX_EXPRESSION_LENGTH = 10_000

# Long expressions are clipped in messages so an error line stays readable in logs and UIs.
_SHOWN_EXPRESSION_CHARS = 200


class ExpressionError(Exception):
    """Base class: something is wrong with an expression itself.

    ``expression`` is the text that failed (filled in by the public entry points when the
    raising code did not know it); ``message`` says what went wrong, without node or field
    names, which the caller adds.
    """

    def __init__(self, message: str, expression: str = "") -> None:
        self.message = message
        self.expression = expression
        super().__init__(message)

    def __str__(self) -> str:
        if not self.expression:
            return self.message
        shown = self.expression
        if len(shown) > _SHOWN_EXPRESSION_CHARS:
            shown = shown[:_SHOWN_EXPRESSION_CHARS] + "…"
        return f"{self.message} (expression: {shown!r})"

    def with_expression(self, expression: str) -> ExpressionError:
        """Attach the failing expression text unless one is already recorded."""
        if not self.expression:
            self.expression = expression
        return self


class ExpressionFunctionError(ExpressionError):
    """A built-in function was misused (e.g. ``$range(5, 1)``); fails the node."""


class ExpressionTooLongError(ExpressionError):
    """The expression is longer than ``MAX_EXPRESSION_LENGTH`` characters."""


class ExpressionNestingError(ExpressionError):
    """Nested ``$`` spans or item expressions go deeper than the engine allows."""


class ExpressionLimitError(ExpressionError):
    """One evaluation went over one of its budgets (steps, time, result size)."""


class ExpressionWorkLimitError(ExpressionLimitError):
    """One evaluation did more steps than the engine allows (e.g. nested ``.map`` loops)."""


class ExpressionTimeLimitError(ExpressionLimitError):
    """One evaluation ran longer than its wall-clock budget."""


class ExpressionSizeLimitError(ExpressionLimitError):
    """An operation would build a string, list or number larger than the budget allows."""


def check_length(expression: str) -> None:
    """Reject an expression over the length cap before any parsing work is done."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ExpressionTooLongError(
            f"expression is {len(expression)} characters long; "
            f"the maximum is {MAX_EXPRESSION_LENGTH}",
            expression,
        )
