"""`NodeView`: what a pure node evaluator reads, whoever runs it (the scheduler, or an agent
running a canvas node as a tool)."""

from __future__ import annotations

from typing import Any, Protocol

from libs.expressions import ExpressionContext


class NodeView(Protocol):
    @property
    def data(self) -> dict[str, Any]: ...

    @property
    def label(self) -> str: ...

    @property
    def inputs(self) -> dict[str, Any]: ...

    @property
    def first_input(self) -> Any: ...

    @property
    def ctx(self) -> ExpressionContext: ...

    @property
    def vars(self) -> dict[str, Any]: ...
