"""The sandboxed evaluator: simpleeval wired to the language's names, values and limits."""

from __future__ import annotations

import ast
import re
import types
import uuid
from collections.abc import Iterator, Mapping
from datetime import tzinfo
from functools import lru_cache
from random import Random
from typing import Any

from simpleeval import (
    DISALLOW_FUNCTIONS,
    EvalWithCompoundTypes,
    FeatureNotAvailable,
    NameNotDefined,
)

from libs.expressions._attributes import resolve_attribute
from libs.expressions._context import ExpressionContext
from libs.expressions._functions import CONDITION_FUNCTIONS, Function, item_concat
from libs.expressions._paths import resolve_path
from libs.expressions._plain import stringify
from libs.expressions._rewrite import rewrite_code, unalias
from libs.expressions._runtime import BoundMethod, MissingAttributeError
from libs.expressions._scanner import find_spans
from libs.expressions.errors import ExpressionError, ExpressionNestingError, check_length

MAX_NESTING = 64
_CONDITION_NAMES: Mapping[str, Any] = types.MappingProxyType(
    {"None": None, "null": None, "undefined": None, "true": True, "false": False}
)
_ITEM_WORD_RE = re.compile(r"\bitem\b")
_ITEM_PATH_RE = re.compile(r"\bitem(?:\.[A-Za-z_]\w*|\[[^\]]*\])*")


@lru_cache(maxsize=4096)
def parse(code: str) -> ast.expr:
    """Parse rewritten expression text once; workflows re-evaluate the same fields a lot."""
    return ast.parse(code, mode="eval").body


def parses(code: str) -> bool:
    try:
        parse(rewrite_code(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


class _HeymEval(EvalWithCompoundTypes):  # type: ignore[misc]
    """simpleeval with the language's name lookup, attribute table and subscripts."""

    def __init__(self, session: Session) -> None:
        super().__init__(functions=dict(session.functions), names={})
        # EvalWithCompoundTypes installs Python's list/dict/... constructors; ours win.
        self.functions = session.functions
        self._session = session

    def _eval_name(self, node: ast.Name) -> Any:
        try:
            return self._session.lookup(node.id)
        except MissingAttributeError:
            raise NameNotDefined(unalias(node.id), self.expr) from None

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        # Only the engine's own tables are consulted (never getattr), so no Python
        # internals are reachable, and simpleeval's `.format` ban does not hit dates.
        return resolve_attribute(self._eval(node.value), node.attr, self._session)

    def _eval_subscript(self, node: ast.Subscript) -> Any:
        container = self._eval(node.value)
        key = self._eval(node.slice)
        if isinstance(container, Mapping):
            return container.get(key)
        if isinstance(container, list | tuple | str):
            if isinstance(key, slice):
                return container[key]
            if isinstance(key, int) and not isinstance(key, bool):
                return container[key] if -len(container) <= key < len(container) else None
        raise TypeError(f"cannot index {type(container).__name__} with {key!r}")

    def _eval_formattedvalue(self, node: ast.FormattedValue) -> Any:
        # Format specs such as `{x:>999999999}` allocate unbounded strings.
        if node.format_spec is not None:
            raise FeatureNotAvailable("format specifications are not supported")
        return stringify(self._eval(node.value))

    def _check_disallowed_items(self, item: Any) -> None:
        # Values are JSON data or built by the engine's own tables, so simpleeval's deep
        # walk of every container after every step is pure cost; a shallow check remains.
        if isinstance(item, types.ModuleType):
            raise FeatureNotAvailable("modules are not allowed")
        if isinstance(item, BoundMethod) or not callable(item):
            return
        try:
            forbidden = item in DISALLOW_FUNCTIONS
        except TypeError:
            forbidden = False
        if forbidden:
            raise FeatureNotAvailable("this function is forbidden")


class Session:
    """One evaluation pass over a context: names, functions, placeholders and depth."""

    def __init__(
        self,
        ctx: ExpressionContext,
        names: Mapping[str, Any],
        functions: Mapping[str, Function],
        *,
        depth: int = 0,
        span_source: Session | None = None,
    ) -> None:
        self.ctx = ctx
        self.names = names
        self.functions = functions
        self._depth = depth
        # Spans inside a condition resolve against the full context even though the
        # condition's own code only sees the tiny builtin set.
        self._span_source = span_source
        self._bound: dict[str, Any] = {}

    @classmethod
    def for_context(cls, ctx: ExpressionContext) -> Session:
        return cls(ctx, ctx.names, ctx.functions)

    @classmethod
    def for_condition(cls, ctx: ExpressionContext) -> Session:
        full = cls.for_context(ctx)
        return cls(ctx, _CONDITION_NAMES, CONDITION_FUNCTIONS, span_source=full)

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
        return Session(self.ctx, chosen, self.functions, depth=self._depth + 1)

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
        rewritten = rewrite_code(code)
        return _HeymEval(self).eval(rewritten, previously_parsed=parse(rewritten))

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
        scope = self._child(_Overlay(self.names, "item", item))
        scope.functions = {**self.functions, "concat": item_concat(scope.evaluate)}
        text = expr.strip()
        # "- item.title (item.year)" is a text pattern, not code: fill in the item paths.
        if _ITEM_WORD_RE.search(text) and "$" not in text and not parses(text):
            return _ITEM_PATH_RE.sub(lambda m: _item_text(scope.evaluate(m.group(0))), text)
        return scope.evaluate(text)


def _item_text(value: Any) -> str:
    return "" if value is None else stringify(value)


class _Overlay(Mapping[str, Any]):
    """``names`` plus one extra name, without copying the whole context per item."""

    def __init__(self, names: Mapping[str, Any], key: str, value: Any) -> None:
        self._names = names
        self._key = key
        self._value = value

    def __getitem__(self, name: str) -> Any:
        return self._value if name == self._key else self._names[name]

    def __contains__(self, name: object) -> bool:
        return name == self._key or name in self._names

    def __iter__(self) -> Iterator[str]:
        yield self._key
        yield from (k for k in self._names if k != self._key)

    def __len__(self) -> int:
        return len(self._names) + (0 if self._key in self._names else 1)
