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
) -> None:
    """Write one finished span with the ids of `ctx` under `parent_span_id` (None: a root).

    Returns at once when tracing is off or the run is not sampled: no span object is made."""
    telemetry = runtime.current()
    if telemetry.tracer is None or ctx is None or not ctx.sampled:
        return
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, Status, StatusCode
    from opentelemetry.trace import TraceFlags as Flags

    sampled = Flags(Flags.SAMPLED)
    parent: Context = Context()
    if parent_span_id is not None:
        remote = SpanContext(ctx.trace_id, parent_span_id, is_remote=True, trace_flags=sampled)
        parent = trace.set_span_in_context(NonRecordingSpan(remote))
    span_links = [
        Link(SpanContext(link.trace_id, link.span_id, is_remote=True, trace_flags=sampled))
        for link in links
    ]
    clean = {k: v for k, v in attributes.items() if v is not None}
    with runtime.preset_ids(ctx.trace_id, ctx.span_id):
        span = telemetry.tracer.start_span(
            name,
            context=parent,
            attributes=clean,
            links=span_links,
            start_time=start_ns,
            record_exception=False,
            set_status_on_exception=False,
        )
    telemetry.spans_started += 1
    if error is not None:
        span.set_status(Status(StatusCode.ERROR, error[:512]))
    span.end(end_time=max(end_ns, start_ns))


def record_metric(kind: str, *args: Any) -> None:
    """Hand a measurement to the metric instruments, if metrics are on."""
    meters = runtime.current().meters
    if meters is not None:
        getattr(meters, kind)(*args)
