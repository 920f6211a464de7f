"""Evaluation sessions: nested `$` spans, item expressions and the null fallback."""

from __future__ import annotations

import re
import types
import uuid
from collections.abc import Iterator, Mapping
from datetime import tzinfo
from functools import lru_cache
from random import Random
from typing import Any

from libs.expressions._budget import Budget, active
from libs.expressions._context import ExpressionContext
from libs.expressions._functions import CONDITION_FUNCTIONS, Function, item_concat
from libs.expressions._paths import resolve_path
from libs.expressions._plain import stringify
from libs.expressions._rewrite import unalias
from libs.expressions._runtime import MissingAttributeError
from libs.expressions._sandbox import parses, sandbox_for
from libs.expressions._scanner import find_spans
from libs.expressions.errors import ExpressionError, ExpressionNestingError, check_length

MAX_NESTING = 64
_CONDITION_NAMES: Mapping[str, Any] = types.MappingProxyType(
    {"None": None, "null": None, "undefined": None, "true": True, "false": False}
)
_ITEM_WORD_RE = re.compile(r"\bitem\b")
# "- item.title" parses as a negation, but a leading bullet and a space mean a text line.
_BULLET_RE = re.compile(r"^[-*+•]\s")
_ITEM_PATH_RE = re.compile(r"\bitem(?:\.[A-Za-z_]\w*|\[[^\]]*\])*")


@lru_cache(maxsize=1024)
def _is_item_pattern(text: str) -> bool:
    """True for text patterns like `- item.title (item.year)`: item paths get filled in."""
    if "$" in text or not _ITEM_WORD_RE.search(text):
        return False
    return bool(_BULLET_RE.match(text)) or not parses(text)


class _Overlay(Mapping[str, Any]):
    """``names`` plus a settable ``item``, without copying the whole context per item."""

    def __init__(self, names: Mapping[str, Any]) -> None:
        self._names = names
        self.item: Any = None

    def __getitem__(self, name: str) -> Any:
        return self.item if name == "item" else self._names[name]

    def __contains__(self, name: object) -> bool:
        return name == "item" or name in self._names

    def __iter__(self) -> Iterator[str]:
        yield "item"
        yield from (k for k in self._names if k != "item")

    def __len__(self) -> int:
        return len(self._names) + (0 if "item" in self._names else 1)


class Session:
    """One evaluation over a context: names, functions, resolved spans, depth, budget."""

    def __init__(
        self,
        ctx: ExpressionContext,
        names: Mapping[str, Any],
        functions: Mapping[str, Function],
        *,
        depth: int = 0,
        span_source: Session | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.ctx = ctx
        self.names = names
        self.functions = functions
        # The budget of the top-level evaluation on this thread (see `_budget.metered`).
        self.budget = budget or active()
        self._depth = depth
        # Spans inside a condition resolve against the full context even though the
        # condition's own code only sees the tiny builtin set.
        self._span_source = span_source
        self._bound: dict[str, Any] = {}
        self._item_scope: tuple[Session, _Overlay] | None = None
        self._item_scope_busy = False

    @classmethod
    def for_context(cls, ctx: ExpressionContext) -> Session:
        return cls(ctx, ctx.names, ctx.functions)

    @classmethod
    def for_condition(cls, ctx: ExpressionContext) -> Session:
        full = cls.for_context(ctx)
        return cls(ctx, _CONDITION_NAMES, CONDITION_FUNCTIONS, span_source=full, budget=full.budget)

    @property
    def rng(self) -> Random:
        return self.ctx.rng

    @property
    def tz(self) -> tzinfo:
        return self.ctx.tz

    def lookup(self, name: str) -> Any:
        name = unalias(name)
        if name in self._bound:
            return self._bound[name]
        if name == "UUID":
            # Fresh per use, drawn from the context RNG so a seeded run is reproducible.
            return uuid.UUID(int=self.rng.getrandbits(128), version=4).hex
        if name in self.names:
            return self.names[name]
        if name in self.functions:
            return self.functions[name]
        raise MissingAttributeError(f"name {name!r} is not defined")

    def _child(self, names: Mapping[str, Any] | None = None) -> Session:
        if self._depth >= MAX_NESTING:
            raise ExpressionNestingError(f"expressions nest deeper than {MAX_NESTING} levels")
        chosen = self.names if names is None else names
        return Session(self.ctx, chosen, self.functions, depth=self._depth + 1, budget=self.budget)

    def evaluate_span(self, span: str) -> Any:
        """Typed value of one `$…` span; a bare `$input` is the first direct input."""
        body = span[1:] if span.startswith("$") else span
        if body.strip() == "input":
            return self.ctx.first_input
        return self.evaluate(body)

    def evaluate(self, body: str) -> Any:
        """Evaluate expression text; evaluator failures fall back to the path resolver."""
        code = self._substitute_spans(body)
        try:
            return self._run(code)
        except ExpressionError:
            raise
        except Exception:
            return resolve_path(code, self)

    def evaluate_code(self, text: str) -> Any:
        """Evaluate text with embedded `$` spans (arithmetic / condition modes); may raise."""
        return self._run(self._substitute_spans(text))

    def _run(self, code: str) -> Any:
        with sandbox_for(self) as sandbox:
            return sandbox.run(code)

    def _substitute_spans(self, text: str) -> str:
        check_length(text)
        if "$" not in text:
            return text
        spans = find_spans(text, code=True)
        if not spans:
            return text
        resolver = (self._span_source or self)._child()
        parts: list[str] = []
        last = 0
        for span in spans:
            parts.append(text[last : span.start])
            parts.append(self._bind(resolver.evaluate_span(span.text)))
            last = span.end
        parts.append(text[last:])
        return "".join(parts)

    def _bind(self, value: Any) -> str:
        # Resolved spans enter the code as names, not re-printed literals, so dates,
        # objects and strings with quotes keep their exact value and type.
        name = f"_heym_{len(self._bound)}"
        self._bound[name] = value
        return name

    def eval_item(self, expr: str, item: Any) -> Any:
        """A `.map` / `.filter` / `.sort` expression string evaluated for one item."""
        if not isinstance(expr, str):
            raise TypeError("item expressions must be strings")
        if self._item_scope_busy:
            # Re-entered while the shared scope is mid-evaluation: use a private one.
            return _eval_in_scope(*self._new_item_scope(), expr, item)
        if self._item_scope is None:
            self._item_scope = self._new_item_scope()
        # One scope serves every item of a .map(), instead of one per item.
        self._item_scope_busy = True
        try:
            return _eval_in_scope(*self._item_scope, expr, item)
        finally:
            self._item_scope_busy = False

    def _new_item_scope(self) -> tuple[Session, _Overlay]:
        overlay = _Overlay(self.names)
        scope = self._child(overlay)
        # concat resolves its 'item.x' arguments in a fresh child: the scope itself is
        # mid-evaluation when concat runs.
        scope.functions = {
            **self.functions,
            "concat": item_concat(lambda path: scope._child().evaluate(path)),
        }
        return scope, overlay


def _eval_in_scope(scope: Session, overlay: _Overlay, expr: str, item: Any) -> Any:
    overlay.item = item
    scope._bound.clear()
    text = expr.strip()
    if _is_item_pattern(text):
        return _ITEM_PATH_RE.sub(lambda m: _item_text(scope.evaluate(m.group(0))), text)
    return scope.evaluate(text)


def _item_text(value: Any) -> str:
    return "" if value is None else stringify(value)
