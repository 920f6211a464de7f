"""Getting finished spans to the collector without ever slowing a run: a bounded queue in
front of the SDK's batch processor (a full queue drops and counts), and an exporter guard
that keeps the exporter's health and logs a failing collector once, not once per batch."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

log = logging.getLogger("heym.telemetry")

# Loggers of the OTLP exporters: they log every failed batch (and every retry). Their
# messages are kept as the exporter's last error and not printed (ExportHealth logs once).
EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.common.http",
)


class ExportHealth:
    """The exporter's state as seen by the status API: counts, and the last error (once)."""

    def __init__(self, target: str, secrets: Sequence[str] = ()) -> None:
        self.target = target
        self._secrets = [s for s in secrets if s]
        self._lock = threading.Lock()
        self.state = "idle"  # idle (nothing sent yet) | ok | failing
        self.exported = 0
        self.failed = 0
        self.failures = 0  # failed export attempts
        self.dropped = 0
        self.started = 0
        self.last_error: str | None = None
        self._reason: str | None = None

    def note_reason(self, message: str) -> None:
        """What the exporter said about its last failure (from its own log record)."""
        self._reason = self.scrub(message)

    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def exported_ok(self, count: int) -> None:
        with self._lock:
            self.exported += count
            recovered = self.state == "failing"
            self.state = "ok"
        if recovered:
            log.warning("span export to %s works again", self.target)

    def export_failed(self, count: int, why: str | None = None) -> None:
        reason = self.scrub(why) if why else (self._reason or "the collector refused the batch")
        with self._lock:
            self.failed += count
            self.failures += 1
            first = self.state != "failing"
            self.state = "failing"
            self.last_error = reason
        if first:
            # Once per outage: a collector that is down must not flood the service's log.
            log.warning(
                "span export to %s failed (%s); spans are dropped until it works again, "
                "and further failures are not logged",
                self.target,
                reason,
            )

    def drop(self) -> None:
        with self._lock:
            self.dropped += 1

    def skipped(self, count: int) -> None:
        """A batch dropped unsent (the service stopped while the collector failed)."""
        with self._lock:
            self.dropped += count


class _ReasonFilter(logging.Filter):
    """Takes the exporter's own failure messages for `ExportHealth` and silences them."""

    def __init__(self, health: ExportHealth) -> None:
        super().__init__()
        self._health = health

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            self._health.note_reason(record.getMessage())
        return False


def silence_exporter_logs(health: ExportHealth) -> list[tuple[logging.Logger, logging.Filter]]:
    installed: list[tuple[logging.Logger, logging.Filter]] = []
    for name in EXPORTER_LOGGERS:
        logger = logging.getLogger(name)
        flt = _ReasonFilter(health)
        logger.addFilter(flt)
        installed.append((logger, flt))
    return installed


# A collector back after an outage gets spans again within this long.
MAX_BACKOFF_S = 10.0


class GuardedExporter(SpanExporter):
    """Wraps the OTLP exporter: frees queue room as batches leave, records every outcome,
    and while the collector fails, waits (on the exporter's own thread) before trying again,
    doubling up to `MAX_BACKOFF_S`. Meanwhile spans wait in the bounded queue, and those that
    do not fit are dropped (counted) before anything is encoded, so a collector that is down
    costs the service next to nothing and gets the queued spans when it is back."""

    def __init__(self, inner: SpanExporter, health: ExportHealth, queue: BoundedQueue) -> None:
        self._inner = inner
        self._health = health
        self._queue = queue
        self._backoff_s = 0.0
        self._retry_at = 0.0
        self._stopping = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        wait = self._retry_at - time.monotonic()
        if self._backoff_s and wait > 0 and self._stopping.wait(wait):
            self._queue.left(len(spans))
            self._health.skipped(len(spans))  # stopping: no time left to try again
            return SpanExportResult.FAILURE
        self._queue.left(len(spans))
        try:
            result = self._inner.export(spans)
        except Exception as exc:  # the exporter must never take the worker thread down
            result = SpanExportResult.FAILURE
            self._health.export_failed(len(spans), f"{type(exc).__name__}: {exc}")
        else:
            if result is SpanExportResult.SUCCESS:
                self._health.exported_ok(len(spans))
            else:
                self._health.export_failed(len(spans))
        if result is SpanExportResult.SUCCESS:
            self._backoff_s = 0.0
        else:
            self._backoff_s = min(max(1.0, self._backoff_s * 2), MAX_BACKOFF_S)
            self._retry_at = time.monotonic() + self._backoff_s
        return result

    def stop_waiting(self) -> None:
        """No more back-off: the service is stopping (the queue is flushed or given up)."""
        self._stopping.set()

    def shutdown(self) -> None:
        self._stopping.set()
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class BoundedQueue:
    """How many finished spans wait for export; past `limit`, new spans are dropped (counted)
    before they reach the batch processor, so a stalled collector costs a counter increment."""

    def __init__(self, limit: int, health: ExportHealth) -> None:
        self.limit = limit
        self._health = health
        self._waiting = 0
        self._lock = threading.Lock()

    def enter(self) -> bool:
        with self._lock:
            if self._waiting >= self.limit:
                full = True
            else:
                self._waiting += 1
                full = False
        if full:
            self._health.drop()
        return not full

    def left(self, count: int) -> None:
        with self._lock:
            self._waiting = max(0, self._waiting - count)


class BoundedBatchProcessor(SpanProcessor):
    """The SDK's batch processor (background thread, batches) behind `BoundedQueue`."""

    def __init__(
        self, inner: BatchSpanProcessor, queue: BoundedQueue, exporter: GuardedExporter
    ) -> None:
        self._inner = inner
        self._queue = queue
        self._exporter = exporter

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None or not span.context.trace_flags.sampled:
            return
        if self._queue.enter():
            self._inner.on_end(span)

    def shutdown(self) -> None:
        self._exporter.stop_waiting()
        self._inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def join_within(target: object, seconds: float) -> bool:
    """Run `target()` on a daemon thread and wait at most `seconds` (a hanging collector must
    not hold up a service's shutdown); True if it finished."""
    done = threading.Event()

    def call() -> None:
        try:
            target()  # type: ignore[operator]
        except Exception:
            log.debug("telemetry shutdown step failed", exc_info=True)
        finally:
            done.set()

    threading.Thread(target=call, name="heym-telemetry-shutdown", daemon=True).start()
    deadline = time.monotonic() + seconds
    return done.wait(max(0.0, deadline - time.monotonic()))


def fast_exporter(endpoint: str, headers: dict[str, str], timeout: float) -> SpanExporter:
    """The SDK's OTLP/HTTP span exporter, encoding Heym's spans with `encoding` (its HTTP
    client, retries and timeouts unchanged). Should the exporter's internals change (its
    `_client`), or a span not fit the hand encoder, the exporter's own path is used."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from libs.telemetry.encoding import Unencodable, encode_request

    class HeymSpanExporter(OTLPSpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            client = getattr(self, "_client", None)
            if client is None or getattr(self, "_shutdown", False):
                return super().export(spans)
            try:
                data = encode_request(spans)
            except Unencodable:
                return super().export(spans)
            outcome = client.export(data)
            ok = bool(getattr(outcome, "success", False))
            return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    return HeymSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout)
