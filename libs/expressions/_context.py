"""The names an expression can see for one node (spec §3.1) and how they are built."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo
from types import MappingProxyType
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from libs.expressions._dates import DotDateTime
from libs.expressions._functions import Function, build_functions
from libs.expressions.errors import ExpressionError


@dataclass(frozen=True)
class ExpressionContext:
    """Everything one node's expressions resolve against; build it with ``build_context``.

    ``names`` holds plain (JSON-like) values; evaluation never mutates them, so one context
    may be shared by all fields of a node.
    """

    names: Mapping[str, Any]
    first_input: Any
    now: DotDateTime
    tz: tzinfo
    rng: random.Random = field(repr=False, compare=False)
    functions: Mapping[str, Function] = field(repr=False, compare=False)

    def with_names(self, names: Mapping[str, Any]) -> ExpressionContext:
        """A copy with extra top-level names overlaid (e.g. ``item`` for a loop preview)."""
        merged = {**self.names, **names}
        return replace(self, names=MappingProxyType(merged))


def _zone(name: str) -> tzinfo:
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ExpressionError(f"unknown timezone {name!r}") from exc


def _first_input(direct_inputs: Mapping[str, Any]) -> Any:
    first: Any = next(iter(direct_inputs.values()), {})
    return first if isinstance(first, Mapping) else {"value": first}


def build_context(
    direct_inputs: Mapping[str, Any],
    upstream: Mapping[str, Any],
    *,
    vars: Mapping[str, Any] | None = None,  # the spec's name for run variables
    global_vars: Mapping[str, Any] | None = None,
    credentials: Mapping[str, str] | None = None,
    now: datetime | None = None,
    timezone: str = "UTC",
    extra: Mapping[str, Any] | None = None,
    random_seed: int | None = None,
) -> ExpressionContext:
    """Assemble a node's expression context.

    ``direct_inputs`` maps each incoming edge's source label to its output (dict outputs
    also have their keys flattened to the top level; labels win over flattened keys);
    ``upstream`` maps every transitive ancestor's label to its output. ``now`` pins the
    clock (a replayed run passes the recorded time); naive values are read as UTC and
    shown in ``timezone``. ``random_seed`` makes `$UUID`, `randomInt` and `.random()`
    reproducible. ``extra`` names are overlaid last.
    """
    tz = _zone(timezone)
    moment = now if now is not None else datetime.now(tz)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    clock = DotDateTime(moment.astimezone(tz))
    run_vars = dict(vars or {})

    names: dict[str, Any] = {}
    for output in direct_inputs.values():
        if isinstance(output, Mapping):
            names.update(output)
    names.update(upstream)
    names.update(direct_inputs)
    names.update(
        {
            "now": clock,
            "null": None,
            "None": None,
            "undefined": None,
            "true": True,
            "false": False,
            "credentials": dict(credentials or {}),
            "vars": run_vars,
            # Globals as stored, overlaid with this run's variables (spec §3.1).
            "global": {**(global_vars or {}), **run_vars},
        }
    )
    extra_names = dict(extra or {})
    names.update({k: v for k, v in extra_names.items() if k != "input"})
    # `input` is a snapshot copy, so `$input.text` searches every name without a cycle.
    names["input"] = extra_names.get("input", dict(names))

    rng = random.Random(random_seed)
    return ExpressionContext(
        names=MappingProxyType(names),
        first_input=_first_input(direct_inputs),
        now=clock,
        tz=tz,
        rng=rng,
        functions=MappingProxyType(build_functions(tz, rng, clock)),
    )
