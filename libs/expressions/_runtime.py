"""Evaluation-time plumbing shared by methods: the runtime protocol and bound methods."""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any, Protocol

MethodImpl = Callable[..., Any]
"""A method implementation, called as ``impl(runtime, receiver, *args)``."""


class MissingAttributeError(LookupError):
    """A name or attribute does not exist on a value (the caller falls back to null)."""


class Runtime(Protocol):
    """What value methods may use from the evaluation that called them."""

    @property
    def rng(self) -> random.Random: ...

    @property
    def tz(self) -> tzinfo: ...

    def lookup(self, name: str) -> Any:
        """Value of a top-level name; raises MissingAttributeError when unknown."""
        ...

    def eval_item(self, expr: str, item: Any) -> Any:
        """Evaluate a `.map` / `.filter` style expression string with ``item`` bound."""
        ...


_DICT_ATTRIBUTES = frozenset(dir(dict))
_LIST_ATTRIBUTES = frozenset(dir(list))


# eq=False keeps identity hashing: the receiver may be an unhashable dict or list, and
# simpleeval tests returned callables for membership in its forbidden-function set.
@dataclass(frozen=True, eq=False)
class BoundMethod:
    """A value method picked off a receiver (``$s.upper``), callable by the evaluator."""

    name: str
    impl: MethodImpl
    receiver: Any
    runtime: Runtime

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.impl(self.runtime, self.receiver, *args, **kwargs)

    def is_container_attribute(self) -> bool:
        """True for a name Python's dict or list type has (`items`, `keys`, `pop`, `sort`...)
        on an object or array: such a name is a method only when called, never a value."""
        receiver = self.receiver
        if isinstance(receiver, Mapping):
            return self.name in _DICT_ATTRIBUTES
        return isinstance(receiver, list | tuple) and self.name in _LIST_ATTRIBUTES

    def takes_no_arguments(self) -> bool:
        """True when the method can be called with no arguments (``$now.format``)."""
        params = list(inspect.signature(self.impl).parameters.values())[2:]
        return all(
            p.default is not inspect.Parameter.empty
            or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
            for p in params
        )
