"""A real OTLP/HTTP receiver for tests: decodes the protobuf payloads services post to
`/v1/traces` and `/v1/metrics` (with `opentelemetry-proto`), and can be told to answer
normally, hang, fail, or stop listening, to play a collector that misbehaves."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from libs.embedded.process import free_port


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    start_ns: int
    end_ns: int
    links: list[tuple[str, str]] = field(default_factory=list)

    @property
    def error(self) -> bool:
        return self.status_code == 2


@dataclass
class ReceivedPoint:
    metric: str
    attributes: dict[str, Any]
    value: float  # a sum's value, or a histogram's count


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return _attrs(v.kvlist_value.values)
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs if isinstance(kv, KeyValue)}


class OtlpReceiver:
    """`mode`: "ok" answers 200, "hang" holds each request until released (or `stop`),
    "fail" answers 503. `stop()` closes the port (a collector that is down)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mode = "ok"
        self.spans: list[ReceivedSpan] = []
        self.points: list[ReceivedPoint] = []
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.hanging = 0
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> OtlpReceiver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver._handle(self)

            def log_message(self, *args: Any) -> None:
                return None

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._release.clear()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def release(self) -> None:
        """Let hanging requests go (they answer 503) and answer normally from now on."""
        self.mode = "ok"
        self._release.set()

    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        body = req.rfile.read(int(req.headers.get("Content-Length") or 0))
        with self._lock:
            self.requests.append((req.path, {k.lower(): v for k, v in req.headers.items()}))
        if self.mode == "hang":
            with self._lock:
                self.hanging += 1
            self._release.wait(120)
            with self._lock:
                self.hanging -= 1
            self._answer(req, 503, b"")
            return
        if self.mode == "fail":
            self._answer(req, 503, b"")
            return
        if req.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if req.path == "/v1/traces":
            self._traces(body)
            self._answer(req, 200, ExportTraceServiceResponse().SerializeToString())
        elif req.path == "/v1/metrics":
            self._metrics(body)
            self._answer(req, 200, ExportMetricsServiceResponse().SerializeToString())
        else:
            self._answer(req, 404, b"")

    @staticmethod
    def _answer(req: BaseHTTPRequestHandler, status: int, payload: bytes) -> None:
        try:
            req.send_response(status)
            req.send_header("Content-Type", "application/x-protobuf")
            req.send_header("Content-Length", str(len(payload)))
            req.end_headers()
            req.wfile.write(payload)
        except OSError:
            pass  # the exporter gave up waiting

    def _traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for rs in request.resource_spans:
            resource = _attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    found.append(
                        ReceivedSpan(
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            attributes=_attrs(s.attributes),
                            resource=resource,
                            status_code=s.status.code,
                            status_message=s.status.message,
                            start_ns=s.start_time_unix_nano,
                            end_ns=s.end_time_unix_nano,
                            links=[(x.trace_id.hex(), x.span_id.hex()) for x in s.links],
                        )
                    )
        with self._lock:
            self.spans.extend(found)

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        found = []
        for rm in request.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = m.WhichOneof("data")
                    if kind == "sum":
                        for p in m.sum.data_points:
                            value = p.as_double if p.HasField("as_double") else p.as_int
                            found.append(ReceivedPoint(m.name, _attrs(p.attributes), value))
                    elif kind == "histogram":
                        for h in m.histogram.data_points:
                            found.append(ReceivedPoint(m.name, _attrs(h.attributes), h.count))
        with self._lock:
            self.points.extend(found)

    # -- reading what arrived ----------------------------------------------------------------
    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self._lock:
            return [s for s in self.spans if s.trace_id == trace_id]

    def named(self, name: str) -> list[ReceivedSpan]:
        with self._lock:
            return [s for s in self.spans if s.name == name]

    def run_span(self, run_id: str) -> ReceivedSpan | None:
        """The `heym.workflow.execute` span of run `run_id`, once it arrived."""
        for span in self.named("heym.workflow.execute"):
            if span.attributes.get("heym.run.id") == run_id:
                return span
        return None
