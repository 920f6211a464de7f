"""Building one span after the fact: its ids derived from the log, its times as recorded.

A span here is written once its end is recorded in the event log, by the process whose
append recorded it (so once per piece of work, whatever restarts happened meanwhile), with
the start and end times the events carry. Spans therefore nest across processes and pauses:
a node span's parent is the run span by id, whether or not the run span has been written yet
(it is written when the run completes, with its real start time).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from libs.telemetry import runtime
from libs.telemetry.context import TraceContext

AttributeValue = str | bool | int | float
Attributes = Mapping[str, AttributeValue | None]


def now_ns() -> int:
    return time.time_ns()


def ms_ns(ms: int | float) -> int:
    return int(ms * 1_000_000)


def emit(
    name: str,
    ctx: TraceContext | None,
    parent_span_id: int | None,
    *,
    start_ns: int,
    end_ns: int,
    attributes: Attributes,
    error: str | None = None,
    links: Sequence[TraceContext] = (),
    kind: str = "internal",
    remote_parent: bool = False,
) -> None:
    """Write one finished span with the ids of `ctx` under `parent_span_id` (None: a root).

    Returns at once when tracing is off or the run is not sampled: no span object is made."""
    telemetry = runtime.current()
    if telemetry.pipeline is None or ctx is None or not ctx.sampled:
        return
    telemetry.spans_started += 1
    telemetry.pipeline.write(
        name,
        ctx,
        parent_span_id,
        start_ns=start_ns,
        end_ns=end_ns,
        attributes=attributes,
        error=error,
        links=links,
        kind=kind,
        remote_parent=remote_parent,
    )


def record_metric(kind: str, *args: Any) -> None:
    """Hand a measurement to the metric instruments, if metrics are on."""
    meters = runtime.current().meters
    if meters is not None:
        getattr(meters, kind)(*args)
