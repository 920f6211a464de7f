"""`POST /api/expressions/evaluate`: preview an expression against canvas results (Heym §3.5)."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar import Controller, Request, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException

from libs.accounts import AccountUser
from libs.expressions import (
    MAX_EXPRESSION_LENGTH,
    ExpressionError,
    build_context,
    evaluate_off_loop,
    resolve_value,
)
from libs.workflow import Graph
from services.gateway.auth import required_user
from services.gateway.bodies import json_object
from services.gateway.openapi import EVALUATE, with_body
from services.gateway.workflows import owned

_BARE_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[\w]+|\[[^\]]+\])+$")


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


def _type_name(value: Any) -> str:
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
        outputs: dict[str, Any] = {}
        direct: dict[str, Any] = {}
        upstream: dict[str, Any] = {}
        for r in body.node_results:
            outputs[r.node_id or r.label] = r
        if body.workflow_id:
            row = await owned(request, body.workflow_id, user)
            graph = Graph(row.nodes, row.edges)
            current = body.current_node_id
            for nid in graph.order:
                data = graph.data[nid]
                label = graph.labels[nid]
                result = outputs.get(nid) or outputs.get(label)
                value = result.output if result is not None else None
                if data.get("pinnedData") is not None:  # pinned data beats canvas results
                    value = data["pinnedData"]
                if (
                    graph.types[nid] == "textInput"
                    and body.input_body is not None
                    and value is None
                ):
                    value = (
                        body.input_body
                        if isinstance(body.input_body, dict)
                        else {"text": body.input_body}
                    )
                if value is None or current not in graph.nodes:
                    continue
                if nid in graph.ancestors[current]:
                    upstream[label] = value
                if any(e.source == nid for e in graph.in_edges[current]):
                    direct[label] = value
        else:
            for r in body.node_results:
                upstream[r.label or r.node_id] = r.output
        expression = body.expression.strip()
        if "\n" not in expression and "$" not in expression and _BARE_PATH.match(expression):
            expression = "$" + expression
        ctx = build_context(direct, upstream)
        try:
            value = await evaluate_off_loop(resolve_value, expression, ctx)
        except ExpressionError as exc:
            return {
                "result": None,
                "result_type": "null",
                "preserved_type": False,
                "error": exc.message,
            }
        return {
            "result": value,
            "result_type": _type_name(value),
            "preserved_type": not isinstance(value, str),
            "error": None,
        }
