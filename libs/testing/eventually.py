"""`eventually`: poll a condition until it holds, instead of sleeping in tests."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    check: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "condition not met",
) -> T:
    """Call `check` until it returns a truthy value (returned) or raises no AssertionError.

    On timeout, the last AssertionError (or `message`) is raised, so failures say what was seen.
    """
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return result
            last = None
        except AssertionError as exc:
            last = exc
        if time.monotonic() >= deadline:
            if last is not None:
                raise AssertionError(f"{message} within {timeout}s: {last}") from last
            raise AssertionError(f"{message} within {timeout}s")
        await asyncio.sleep(interval)
