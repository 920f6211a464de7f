"""The sandboxed evaluator: simpleeval wired to the language's names, values and limits."""

from __future__ import annotations

import ast
import threading
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Protocol

from simpleeval import (
    DISALLOW_FUNCTIONS,
    EvalWithCompoundTypes,
    FeatureNotAvailable,
    NameNotDefined,
)

from libs.expressions._attributes import resolve_attribute
from libs.expressions._budget import Budget
from libs.expressions._functions import Function
from libs.expressions._operators import OPERATORS
from libs.expressions._plain import stringify
from libs.expressions._rewrite import rewrite_code, unalias
from libs.expressions._runtime import BoundMethod, MissingAttributeError, Runtime

# Literal values the language has no use for; they would print as Python reprs.
_FOREIGN_CONSTANTS = (complex, type(Ellipsis), bytes)


class Host(Runtime, Protocol):
    """What the evaluator needs from the session driving it."""

    @property
    def functions(self) -> Mapping[str, Function]: ...

    @property
    def budget(self) -> Budget: ...


@lru_cache(maxsize=4096)
def parse(code: str) -> ast.expr:
    """Parse rewritten expression text once; workflows re-evaluate the same fields a lot."""
    return ast.parse(code, mode="eval").body


@lru_cache(maxsize=4096)
def parses(code: str) -> bool:
    """True when ``code`` is one expression after the JS-style rewrites."""
    try:
        parse(rewrite_code(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


class Sandbox(EvalWithCompoundTypes):  # type: ignore[misc]
    """simpleeval with the language's name lookup, attribute table and subscripts."""

    def __init__(self) -> None:
        super().__init__(operators=OPERATORS, functions={}, names={})
        self._host: Host | None = None

    def bind(self, host: Host) -> None:
        # Replaces the Python list/dict/... constructors EvalWithCompoundTypes installs.
        self.functions = host.functions
        self._host = host

    @property
    def host(self) -> Host:
        if self._host is None:
            raise RuntimeError("sandbox used before bind()")
        return self._host

    def run(self, code: str) -> Any:
        rewritten = rewrite_code(code)
        return self.eval(rewritten, previously_parsed=parse(rewritten))

    def _eval(self, node: ast.AST) -> Any:
        self.host.budget.spend()
        return super()._eval(node)

    def _eval_name(self, node: ast.Name) -> Any:
        try:
            return self.host.lookup(node.id)
        except MissingAttributeError:
            raise NameNotDefined(unalias(node.id), self.expr) from None

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        # Only the engine's own tables are consulted (never getattr), so no Python
        # internals are reachable, and simpleeval's `.format` ban does not hit dates.
        return resolve_attribute(self._eval(node.value), node.attr, self.host)

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
        # Format specs such as `{x:>999999999}` allocate unbounded strings; `!r` is ignored
        # (the language's string form is used), so no Python repr reaches a result.
        if node.format_spec is not None:
            raise FeatureNotAvailable("format specifications are not supported")
        return stringify(self._eval(node.value))

    def _eval_joinedstr(self, node: ast.JoinedStr) -> str:
        parts = [stringify(self._eval(value)) for value in node.values]
        self.host.budget.chars(sum(len(p) for p in parts), "the f-string")
        return "".join(parts)

    @staticmethod
    def _eval_constant(node: ast.Constant) -> Any:
        if isinstance(node.value, _FOREIGN_CONSTANTS):
            raise FeatureNotAvailable(f"{type(node.value).__name__} literals are not supported")
        return node.value

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


_POOL = threading.local()
_POOL_SIZE = 16


@contextmanager
def sandbox_for(host: Host) -> Iterator[Sandbox]:
    """A sandbox bound to ``host``, reused from a per-thread pool.

    Building a simpleeval instance costs more than evaluating a short path, and nested
    evaluations each need their own, so instances are checked out and returned.
    """
    free: list[Sandbox] = _POOL.__dict__.setdefault("free", [])
    sandbox = free.pop() if free else Sandbox()
    sandbox.bind(host)
    try:
        yield sandbox
    finally:
        sandbox._host = None
        if len(free) < _POOL_SIZE:
            free.append(sandbox)
