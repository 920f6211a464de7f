"""Evaluation budgets: steps, wall-clock time and result sizes of one top-level evaluation.

The engine enforces them around the evaluated code, never inside it: every AST node visited
spends a step (and every 256 steps the clock is read), and every operation that builds a
string, a list or an integer checks the size of what it is about to build *before* building
it, then charges it to the evaluation's running total. So no expression can run longer than
its time budget by more than one bounded primitive, and none can allocate without bound.

One budget covers one top-level call (``evaluate_single``, ``render_template``, ...) with
every nested span and item expression in it; it lives in a thread-local slot so built-in
functions, which are called without the evaluation session, find it too.

An *inline slice* (``inline_slice``) bounds what evaluation may do on the calling thread when
that thread is an event loop: past a few thousand steps, a few milliseconds or a megabyte
built, ``NeedsThread`` is raised and the caller runs the whole (pure) computation again on
the evaluation pool (``_offload.evaluate_soon``). Ordinary evaluations end inside the slice
and pay no thread hop.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from libs.expressions.errors import (
    ExpressionSizeLimitError,
    ExpressionTimeLimitError,
    ExpressionWorkLimitError,
)

_CLOCK_EVERY = 256


@dataclass(frozen=True)
class Limits:
    """What one evaluation may use. The defaults are documented in docs/security.md."""

    # AST nodes visited, nested spans and item expressions included.
    steps: int = 1_000_000
    # Wall-clock seconds for the whole evaluation.
    seconds: float = 1.0
    # Characters of one string an operation builds (the largest request body is 4 MiB, so
    # any value a request can carry still renders whole).
    chars: int = 4 * 1024 * 1024
    # Items of one list or object an operation builds (as `$range`).
    items: int = 100_000
    # Bits of one integer (about 3,000 decimal digits: always printable and storable).
    int_bits: int = 10_000
    # Characters and items built by all operations of one evaluation together.
    total: int = 16 * 1024 * 1024


LIMITS = Limits()


class NeedsThread(BaseException):
    """The evaluation outgrew its inline slice; run the computation again off the loop.

    A BaseException so that no evaluator's ``except Exception`` (null fallbacks, conditions,
    node evaluators) swallows it.
    """


@dataclass
class InlineSlice:
    """What evaluation may use on an event loop before it must move to the pool.

    Time is the loop thread's own CPU time, not the wall clock: on a busy machine a loop
    that is merely descheduled would otherwise send every decision to the pool.
    """

    steps: int = 10_000
    cpu_seconds: float = 0.02
    built: int = 1024 * 1024

    def __post_init__(self) -> None:
        # The CPU clock is first read at the first check (after a few hundred steps, or the
        # first thing built), not here: a thread clock read is a system call, and most
        # decisions never get that far (measured: the read per decision was 4-8 % of the
        # scheduler's busy samples under load).
        self.deadline: float | None = None

    def _over_time(self) -> bool:
        now = time.thread_time()
        if self.deadline is None:
            self.deadline = now + self.cpu_seconds
            return False
        return now > self.deadline

    def tick(self, steps: int) -> None:
        self.steps -= steps
        if self.steps < 0 or self._over_time():
            raise NeedsThread

    def charge(self, amount: int) -> None:
        self.built -= amount
        if self.built < 0 or self._over_time():
            raise NeedsThread


class Budget:
    """What is left of one evaluation's limits; shared by every nested session."""

    __slots__ = ("_clock_in", "_slice", "built", "deadline", "limits", "steps_left")

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or LIMITS
        self.steps_left = self.limits.steps
        self.deadline = time.monotonic() + self.limits.seconds
        self.built = 0
        self._clock_in = _CLOCK_EVERY
        self._slice: InlineSlice | None = getattr(_local, "slice", None)

    def spend(self, steps: int = 1) -> None:
        """Count evaluation steps; looks at the clock every few hundred."""
        self.steps_left -= steps
        if self.steps_left < 0:
            raise ExpressionWorkLimitError(
                f"expression needs more than {self.limits.steps} evaluation steps"
            )
        self._clock_in -= steps
        if self._clock_in <= 0:
            self._clock_in = _CLOCK_EVERY
            if self._slice is not None:
                self._slice.tick(_CLOCK_EVERY)
            self.check_time()

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise ExpressionTimeLimitError(
                f"expression took longer than {self.limits.seconds:g}s to evaluate"
            )

    def chars(self, count: int, what: str = "a string") -> None:
        """Allow building a string of ``count`` characters, or raise before it is built."""
        if count > self.limits.chars:
            raise ExpressionSizeLimitError(
                f"{what} would be {count} characters long; the maximum is {self.limits.chars}"
            )
        self._charge(count)

    def items(self, count: int, what: str = "a list") -> None:
        """Allow building a list or object of ``count`` items, or raise before it is built."""
        if count > self.limits.items:
            raise ExpressionSizeLimitError(
                f"{what} would have {count} items; the maximum is {self.limits.items}"
            )
        self._charge(count)

    def bits(self, count: int, what: str = "a number") -> None:
        """Allow building an integer of ``count`` bits, or raise before it is built."""
        if count > self.limits.int_bits:
            raise ExpressionSizeLimitError(
                f"{what} would have about {count * 3 // 10} digits; "
                f"the maximum is about {self.limits.int_bits * 3 // 10}"
            )

    def sized(self, value: Any, what: str = "the result") -> Any:
        """Check a value an operation built whose size was only known afterwards.

        Only for operations whose result is at most a small multiple of their (already
        bounded) inputs, so building it first cannot run away.
        """
        if isinstance(value, str):
            self.chars(len(value), what)
        elif isinstance(value, list | tuple | dict):
            self.items(len(value), what)
        elif isinstance(value, int) and value.bit_length() > self.limits.int_bits:
            self.bits(value.bit_length(), what)
        return value

    def _charge(self, amount: int) -> None:
        if self._slice is not None:
            self._slice.charge(amount)
        self.built += amount
        if self.built > self.limits.total:
            raise ExpressionSizeLimitError(
                f"expression builds more than {self.limits.total} characters and items in total"
            )
        self.check_time()


_local = threading.local()


def active() -> Budget:
    """The budget of the evaluation running on this thread (a fresh one outside any)."""
    budget: Budget | None = getattr(_local, "budget", None)
    return budget if budget is not None else Budget()


class metered:
    """Run a top-level evaluation under a fresh budget; nested entries share the outer one."""

    __slots__ = ("_owner",)

    def __init__(self) -> None:
        self._owner = False

    def __enter__(self) -> Budget:
        budget: Budget | None = getattr(_local, "budget", None)
        if budget is None:
            budget = Budget()
            _local.budget = budget
            self._owner = True
        return budget

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._owner:
            _local.budget = None


class inline_slice:
    """Evaluation on this thread within ``InlineSlice`` bounds, or ``NeedsThread``."""

    __slots__ = ("_bounds",)

    def __init__(self, bounds: InlineSlice | None = None) -> None:
        self._bounds = bounds or InlineSlice()

    def __enter__(self) -> InlineSlice:
        _local.slice = self._bounds
        return self._bounds

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _local.slice = None
