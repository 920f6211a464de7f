"""Heym's workflow expression engine: `$…` references, templates and conditions (spec §3).

Pure Python, no I/O. Build one ``ExpressionContext`` per node with ``build_context`` and
evaluate field values with the mode the field uses:

- ``evaluate_single``: a whole value that is one `$` expression, type preserved;
- ``render_template``: text with embedded `$` spans, always a string;
- ``evaluate_condition``: a condition, always a bool (errors give False);
- ``evaluate_arithmetic``: spans as operands of one expression;
- ``resolve_value``: the §3.4 ladder choosing among the above.

Every result is plain JSON-able Python. Misused functions raise
``ExpressionFunctionError`` and over-long expressions ``ExpressionTooLongError``. Every
evaluation runs under a budget (``_budget.Limits``: steps, wall clock, result sizes);
going over it raises an ``ExpressionLimitError``. Evaluation is synchronous CPU work: async
callers run it with ``evaluate_off_loop`` so it never holds up an event loop.
"""

from libs.expressions._classify import has_arithmetic, is_code_like, is_single_expression
from libs.expressions._context import ExpressionContext, build_context
from libs.expressions._modes import (
    evaluate_arithmetic,
    evaluate_condition,
    evaluate_single,
    render_template,
    resolve_value,
)
from libs.expressions._offload import evaluate_off_loop, evaluate_soon
from libs.expressions._plain import stringify, to_plain
from libs.expressions._reference import vocabulary
from libs.expressions._scanner import Span, find_spans
from libs.expressions.errors import (
    MAX_EXPRESSION_LENGTH,
    ExpressionError,
    ExpressionFunctionError,
    ExpressionLimitError,
    ExpressionNestingError,
    ExpressionSizeLimitError,
    ExpressionTimeLimitError,
    ExpressionTooLongError,
    ExpressionWorkLimitError,
)

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "ExpressionContext",
    "ExpressionError",
    "ExpressionFunctionError",
    "ExpressionLimitError",
    "ExpressionNestingError",
    "ExpressionSizeLimitError",
    "ExpressionTimeLimitError",
    "ExpressionTooLongError",
    "ExpressionWorkLimitError",
    "Span",
    "build_context",
    "evaluate_arithmetic",
    "evaluate_condition",
    "evaluate_off_loop",
    "evaluate_single",
    "evaluate_soon",
    "find_spans",
    "has_arithmetic",
    "is_code_like",
    "is_single_expression",
    "render_template",
    "resolve_value",
    "stringify",
    "to_plain",
    "vocabulary",
]
