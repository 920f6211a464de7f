"""The process's telemetry: configured once from `Settings` when a service starts, off by
default. Off means no tracer provider, no exporter thread and no span object: every span
helper returns at its first line."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from libs.config import Settings
from libs.telemetry.config import Exporting, TelemetryConfigError, parse_exporting
from libs.telemetry.context import TraceContext, run_span_id, trace_id_for

if TYPE_CHECKING:
    from libs.telemetry.export import ExportHealth

log = logging.getLogger("heym.telemetry")

RUN_SPAN = "heym.workflow.execute"
MAX_QUEUE = 2048
BATCH_SIZE = 512
EXPORT_TIMEOUT_S = 5.0
SHUTDOWN_WAIT_S = 3.0


@dataclass
class Telemetry:
    """One process's telemetry. `pipeline is None` is the off path: nothing is built."""

    service: str = ""
    instance: str = ""
    enabled: bool = False
    disabled_reason: str | None = "HEYM_OTEL_ENABLED is false"
    exporting: Exporting | None = None
    pipeline: Any = None
    sampler: Any = None
    health: ExportHealth | None = None
    meters: Any = None
    spans_started: int = 0
    _closers: list[Any] = field(default_factory=list)

    @property
    def capture_io(self) -> bool:
        return self.exporting is not None and self.exporting.capture_io


_current = Telemetry()
_lock = threading.Lock()


def current() -> Telemetry:
    return _current


def configure(
    settings: Settings, *, service: str, instance: str, max_queue: int = MAX_QUEUE
) -> Telemetry:
    """Set up this process's telemetry from `settings` (idempotent per process). A bad
    endpoint or header list is logged and leaves tracing off; it never stops the service."""
    global _current
    with _lock:
        if _current.enabled:
            return _current
        if not settings.otel_enabled:
            _current = Telemetry(service=service, instance=instance)
            return _current
        try:
            exporting = parse_exporting(settings)
        except TelemetryConfigError as exc:
            log.error("OpenTelemetry is off: %s", exc)
            _current = Telemetry(service=service, instance=instance, disabled_reason=str(exc))
            return _current
        try:
            _current = _build(exporting, service=service, instance=instance, max_queue=max_queue)
        except Exception as exc:  # an SDK that cannot start leaves the service running
            log.error("OpenTelemetry is off: it could not start: %r", exc)
            _current = Telemetry(service=service, instance=instance, disabled_reason=repr(exc))
        return _current


def _build(exporting: Exporting, *, service: str, instance: str, max_queue: int) -> Telemetry:
    # Imported here: a process with tracing off never loads the SDK's exporter stack.
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    from libs.telemetry.export import (
        BoundedBatchProcessor,
        BoundedQueue,
        ExportHealth,
        GuardedExporter,
        fast_exporter,
        silence_exporter_logs,
    )
    from libs.telemetry.metrics import Meters
    from libs.telemetry.pipeline import Pipeline

    health = ExportHealth(exporting.shown_endpoint, secrets=list(exporting.headers.values()))
    filters = silence_exporter_logs(health)
    resource = Resource.create(
        {
            "service.name": exporting.service_name,
            "service.instance.id": instance,
            "service.namespace": "heym",
            "heym.component": service,
        }
    )
    sampler = ParentBased(TraceIdRatioBased(exporting.ratio))
    queue = BoundedQueue(max_queue, health)
    exporter = GuardedExporter(
        fast_exporter(exporting.traces_url, exporting.headers, EXPORT_TIMEOUT_S), health, queue
    )
    batch = BatchSpanProcessor(
        exporter,
        max_queue_size=max_queue,
        schedule_delay_millis=exporting.delay_ms,
        max_export_batch_size=min(BATCH_SIZE, max_queue),
    )
    pipeline = Pipeline(BoundedBatchProcessor(batch, queue, exporter), resource)
    meters = Meters.start(exporting, resource) if exporting.metrics else None
    telemetry = Telemetry(
        service=service,
        instance=instance,
        enabled=True,
        disabled_reason=None,
        exporting=exporting,
        pipeline=pipeline,
        sampler=sampler,
        health=health,
        meters=meters,
    )
    telemetry._closers = [pipeline.shutdown, *([meters.shutdown] if meters else [])]

    def unfilter() -> None:
        for logger, flt in filters:
            logger.removeFilter(flt)

    telemetry._closers.append(unfilter)
    log.info(
        "OpenTelemetry on: spans to %s (sampler ratio %s)%s",
        exporting.shown_endpoint,
        exporting.ratio,
        ", metrics on" if meters else "",
    )
    return telemetry


def shutdown(wait_s: float = SHUTDOWN_WAIT_S) -> None:
    """Flush what is queued (for at most `wait_s`) and stop the exporter threads."""
    global _current
    with _lock:
        telemetry, _current = _current, Telemetry()
    from libs.telemetry.export import join_within

    for close in telemetry._closers:
        if not join_within(close, wait_s):
            log.warning("telemetry did not flush within %.0fs (collector slow or down)", wait_s)


def new_run_context(run_id: str, parent: str | None) -> TraceContext | None:
    """The context of a new run's root span (`heym.workflow.execute`): a child of `parent`
    (the caller's `traceparent`, or the span of the node or tool that started the run), or,
    with tracing on and no parent, a trace of its own. The sampling decision is taken here,
    once per run, by the parent-based ratio sampler; every span of the run follows it."""
    parent_ctx = TraceContext.parse(parent)
    telemetry = _current
    if parent_ctx is not None and not telemetry.enabled:
        return TraceContext(parent_ctx.trace_id, run_span_id(run_id), parent_ctx.sampled)
    if not telemetry.enabled:
        return None
    trace_id = parent_ctx.trace_id if parent_ctx is not None else trace_id_for(run_id)
    return TraceContext(trace_id, run_span_id(run_id), _sampled(telemetry, parent_ctx, trace_id))


def _sampled(telemetry: Telemetry, parent: TraceContext | None, trace_id: int) -> bool:
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    context = None
    if parent is not None:
        flags = TraceFlags(TraceFlags.SAMPLED if parent.sampled else TraceFlags.DEFAULT)
        span = NonRecordingSpan(SpanContext(parent.trace_id, parent.span_id, True, flags))
        context = trace.set_span_in_context(span)
    result = telemetry.sampler.should_sample(context, trace_id, RUN_SPAN)
    return bool(result.decision.is_sampled())


def run_context(run_id: str, recorded: str | None, parent: str | None) -> TraceContext | None:
    """A run's root context as recorded in its request, or derived the same way if the
    request was written without one."""
    return TraceContext.parse(recorded) or new_run_context(run_id, parent)


def status() -> dict[str, Any]:
    """This process's telemetry, for health replies and the observability API."""
    t = _current
    out: dict[str, Any] = {
        "enabled": t.enabled,
        "spans_started": t.spans_started,
        # The SDK's exporter threads (batch span processor, periodic metric reader): none
        # while tracing is off.
        "exporter_threads": sum(1 for th in threading.enumerate() if th.name.startswith("Otel")),
    }
    if t.disabled_reason:
        out["disabled_reason"] = t.disabled_reason
    if t.health is not None:
        h = t.health
        out.update(
            exporter=h.state,
            exported_spans=h.exported,
            failed_spans=h.failed,
            failed_exports=h.failures,
            dropped_spans=h.dropped,
            last_error=h.last_error,
        )
    return out
