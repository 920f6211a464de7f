"""`POST /api/expressions/evaluate`: preview an expression as the editor shows it (Heym §3.5).

Request `{expression, workflow_id?, current_node_id?, field_name?, input_body?,
selected_loop_iteration_index?, node_results: [{node_id, label, output}]}`; answer `{result,
result_type, preserved_type, error, selected_loop_total?}`. `preserved_type` is true whenever
the whole text is one expression (whatever its value's type), false for text mixing prose and
expressions; each line of a multi-line text that is a whole expression is evaluated whole.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar import Controller, Request, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException

from libs.accounts import AccountUser
from libs.db.globals import global_values
from libs.expressions import (
    MAX_EXPRESSION_LENGTH,
    ExpressionContext,
    ExpressionError,
    build_context,
    evaluate_off_loop,
    has_arithmetic,
    is_single_expression,
    render_template,
    resolve_value,
    stringify,
)
from libs.secrets import credential_values, masked_form
from libs.workflow import Graph
from services.gateway.auth import required_user
from services.gateway.bodies import json_object
from services.gateway.openapi import EVALUATE, with_body
from services.gateway.preview import Canvas, Previewer
from services.gateway.workflows import owned

_BARE_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[\w]+|\[[^\]]+\])+$")
# After `$`: a name, or a literal / group an expression may start with ($100 is currency).
_EXPRESSION_START = re.compile(r"^\$(?:[A-Za-z_({\[\"']|\d+(?:\.\d+)?$)")


class NodeResultIn(msgspec.Struct, kw_only=True):
    node_id: str = ""
    label: str = ""
    output: Any = None


class EvaluateBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    expression: str
    workflow_id: str | None = None
    current_node_id: str | None = None
    field_name: str | None = None
    input_body: Any = None
    selected_loop_iteration_index: int | None = None
    node_results: list[NodeResultIn] = msgspec.field(default_factory=list)


class InvalidExpression(ExpressionError):
    """Text that starts as an expression but is not one (`$@@x`)."""


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _line(text: str, ctx: ExpressionContext) -> str:
    """One line of a multi-line text: evaluated whole when it is one expression."""
    stripped = text.strip()
    if stripped.startswith("$") and (is_single_expression(stripped) or has_arithmetic(stripped)):
        value = resolve_value(stripped, ctx)
        if value is not None:
            return text[: len(text) - len(text.lstrip())] + stringify(value)
        return text
    return render_template(text, ctx)


def evaluate(text: str, ctx: ExpressionContext) -> tuple[Any, bool]:
    """The preview's value and whether its type was preserved (one whole expression)."""
    expression = text.strip()
    if "\n" in expression:
        return "\n".join(_line(line, ctx) for line in text.split("\n")), False
    if "$" not in expression and _BARE_PATH.match(expression):
        expression = "$" + expression
    if expression.startswith("$") and not _EXPRESSION_START.match(expression):
        raise InvalidExpression(f"invalid expression: {expression[:80]!r}")
    value = resolve_value(expression, ctx)
    whole = expression.startswith("$") and is_single_expression(expression)
    return value, whole or (value is not None and not isinstance(value, str))


async def _canvas(
    request: Request[Any, Any, State], body: EvaluateBody, user: AccountUser
) -> tuple[Canvas, dict[str, Any], dict[str, str]]:
    pool = request.app.state.ctx.pool
    global_vars = await global_values(pool, user.id)
    credentials: dict[str, str] = {}
    if "$credentials" in body.expression:
        # The preview shows credentials as every recorded output does: masked.
        secrets = await credential_values(pool, request.app.state.secrets, user.id)
        credentials = {name: masked_form(value) for name, value in secrets.items()}
    if not body.workflow_id:
        upstream = {r.label or r.node_id: r.output for r in body.node_results}
        return Canvas(upstream=upstream), global_vars, credentials
    row = await owned(request, body.workflow_id, user)
    graph = Graph(row.nodes, row.edges)
    by_label = graph.by_label
    results: dict[str, Any] = {}
    for r in body.node_results:
        nid = r.node_id if r.node_id in graph.nodes else by_label.get(r.label)
        if nid is not None and r.output is not None:
            results[nid] = r.output
    current = body.current_node_id
    if current not in graph.nodes:
        return Canvas(), global_vars, credentials
    previewer = Previewer(
        graph,
        results,
        input_body=body.input_body,
        loop_index=body.selected_loop_iteration_index,
        global_vars=global_vars,
        credentials=credentials,
    )
    canvas = await evaluate_off_loop(previewer.canvas, current)  # evaluates upstream nodes
    return canvas, global_vars, credentials


class ExpressionController(Controller):
    path = "/api/expressions"
    tags = ["expressions"]
    dependencies = {"user": Provide(required_user)}

    @post(
        "/evaluate",
        summary="Evaluate an expression in a node's context",
        status_code=200,
        operation_class=with_body(EVALUATE),
    )
    async def evaluate(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> dict[str, Any]:
        try:
            body = msgspec.convert(await json_object(request), EvaluateBody)
        except msgspec.ValidationError as exc:
            raise ClientException(detail=f"invalid body: {exc}") from None
        if len(body.expression) > MAX_EXPRESSION_LENGTH:
            raise ClientException(
                detail=f"expression is longer than {MAX_EXPRESSION_LENGTH} characters"
            )
        canvas, global_vars, credentials = await _canvas(request, body, user)
        ctx = build_context(
            canvas.direct,
            canvas.upstream,
            vars=canvas.vars,
            global_vars=global_vars,
            credentials=credentials,
        )
        answer: dict[str, Any]
        try:
            # Evaluation is CPU work under its budget: never on the loop serving requests.
            value, preserved = await evaluate_off_loop(evaluate, body.expression, ctx)
        except ExpressionError as exc:
            answer = {
                "result": None,
                "result_type": "null",
                "preserved_type": False,
                "error": exc.message,
            }
        else:
            answer = {
                "result": value,
                "result_type": type_name(value),
                "preserved_type": preserved,
                "error": None,
            }
        if canvas.loop_total is not None:
            answer["selected_loop_total"] = canvas.loop_total
        return answer
