"""What performing a step yields: the events that record it, and the follow-ups (`after`)
that may only happen once those events are recorded."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from contracts.base import Event

After = Callable[[], Awaitable[None]]


@dataclass
class Work:
    events: list[Event]
    after: list[After] = field(default_factory=list)


def now_ms() -> int:
    return int(time.time() * 1000)
