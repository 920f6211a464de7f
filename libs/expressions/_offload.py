"""Evaluation off the event loop: one shared thread pool that async callers hand work to.

Evaluating is CPU work bounded by its budget (up to a second); on an event loop it would
hold up every other request and run that loop serves. Threads, not processes: the budget
already stops runaway work, and a thread hop costs tens of microseconds where a process
round trip would cost the copy of the whole context.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# Enough that one caller's slow evaluations do not queue another's quick ones behind them.
MAX_THREADS = 32

_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(MAX_THREADS, thread_name_prefix="heym-eval")
        return _executor


async def evaluate_off_loop(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` on the evaluation pool, awaited from the event loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool(), functools.partial(fn, *args, **kwargs))
