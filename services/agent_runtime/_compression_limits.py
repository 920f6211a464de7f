"""Context-window sizes for compression: the provider's answer first, then Heym's table (§4.7)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_LIMIT = 128_000

# Heym §4.7, in table order: lookup is a case-insensitive substring match and the first match
# wins, so the specific names must precede their prefixes ("gpt-4o" before "gpt-4", "o3-mini"
# before "o3").
MODEL_CONTEXT_LIMITS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o-mini", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4.5", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o4-mini", 200_000),
    ("o3-mini", 200_000),
    ("o1-mini", 128_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-5-haiku", 200_000),
    ("claude-3-opus", 200_000),
    ("claude-3-haiku", 200_000),
    ("claude-haiku", 200_000),
    ("gemini-2.5-pro", 1_048_576),
    ("gemini-2.5-flash", 1_048_576),
    ("gemini-2.0-flash", 1_048_576),
    ("gemini-1.5-pro", 2_000_000),
    ("gemini-1.5-flash", 1_000_000),
)


def _positive_int(value: Any) -> int | None:
    # bool is an int subclass, and `True` is not a context window.
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def reported_context_window(model_info: Any) -> int | None:
    """`context_window` from a provider's model card: a dict key, an attribute, or (for the
    openai client's pydantic `Model`, which keeps unknown fields aside) `model_extra`."""
    if isinstance(model_info, Mapping):
        return _positive_int(model_info.get("context_window"))
    found = _positive_int(getattr(model_info, "context_window", None))
    if found is not None:
        return found
    extra = getattr(model_info, "model_extra", None)
    if isinstance(extra, Mapping):
        return _positive_int(extra.get("context_window"))
    return None


def table_context_limit(model: str) -> int | None:
    """The first table entry whose name occurs in `model` (case-insensitive), if any."""
    lowered = model.lower()
    for name, limit in MODEL_CONTEXT_LIMITS:
        if name in lowered:
            return limit
    return None


async def context_limit(model: str, retrieve: Callable[[str], Awaitable[Any]] | None) -> int:
    """The model's context window in tokens: the provider's model card, else the table, else
    128,000. Any failure of the lookup only means falling through to the next source."""
    if retrieve is not None:
        try:
            found = reported_context_window(await retrieve(model))
        except Exception as exc:  # most providers do not serve /models/{id}; that is normal
            log.debug("no context window from the provider for %s: %r", model, exc)
        else:
            if found is not None:
                return found
    from_table = table_context_limit(model)
    return DEFAULT_CONTEXT_LIMIT if from_table is None else from_table
