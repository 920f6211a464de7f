"""Evaluation off the event loop: one shared thread pool that async callers hand work to.

Evaluating is CPU work bounded by its budget (up to a second); on an event loop it would
hold up every other request and run that loop serves. Threads, not processes: the budget
already stops runaway work, and a thread hop costs tens of microseconds where a process
round trip would cost the copy of the whole context.

`evaluate_off_loop(fn, ...)` always hops. `evaluate_soon(compute)` is for hot paths (the
scheduler's decisions): it runs ``compute()`` on the loop within an inline slice (10,000
steps, 20 ms of the loop thread's CPU, 1 MiB built) and, if evaluation outgrows the slice,
runs ``compute()`` again from the start on the pool; ``compute`` must therefore be pure
(work on its own copies). Most decisions end inside the slice and pay no hop; measured, a
hop for every decision cost the 10-node workflow throughput 15-35 % on a loaded machine
(GIL hand-offs between the loop and the pool threads).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from libs.expressions._budget import NeedsThread, inline_slice

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


async def evaluate_soon(compute: Callable[[], T]) -> T:
    """``compute()`` on the loop if its evaluation fits an inline slice, else on the pool."""
    try:
        with inline_slice():
            return compute()
    except NeedsThread:
        return await evaluate_off_loop(compute)
