"""The hand-written OTLP encoding says exactly what the exporter's own encoder says."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from libs.telemetry.encoding import Unencodable, encode_request

pytestmark = pytest.mark.unit

SAMPLED = TraceFlags(TraceFlags.SAMPLED)
SCOPE = InstrumentationScope("heym", "0.1.0")
OTHER_SCOPE = InstrumentationScope("other", None, "https://schema.example/1")


def span(span_id: int, **kw: object) -> ReadableSpan:
    args: dict[str, object] = {
        "name": "heym.node.execute",
        "context": SpanContext(0xABC, span_id, False, SAMPLED),
        "parent": SpanContext(0xABC, 7, False, SAMPLED),
        "resource": Resource.create({"service.name": "heym", "heym.component": "scheduler"}),
        "attributes": {"heym.node.id": "n1", "heym.node.duration_ms": 1.5},
        "start_time": 1_700_000_000_000_000_000,
        "end_time": 1_700_000_000_002_000_000,
        "instrumentation_scope": SCOPE,
    }
    args.update(kw)
    return ReadableSpan(**args)  # type: ignore[arg-type]


def decoded(data: bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    request.ParseFromString(data)
    return request


def test_same_request_as_the_exporters_encoder() -> None:
    other = Resource.create({"service.name": "heym", "heym.component": "agent_runtime"})
    spans = [
        span(1),
        span(
            2,
            name="heym.workflow.execute",
            parent=SpanContext(0xABC, 9, True, SAMPLED),
            attributes={
                "text": "naïve ✓",
                "yes": True,
                "no": False,
                "count": 7,
                "negative": -3,
                "zero": 0,
                "big": 2**62,
                "ratio": 0.25,
                "empty": "",
            },
            status=Status(StatusCode.ERROR, "the run failed"),
            kind=SpanKind.SERVER,
        ),
        span(3, parent=None, kind=SpanKind.CLIENT, status=Status(StatusCode.OK)),
        span(4, links=[Link(SpanContext(0xDEF, 11, True, SAMPLED))], resource=other),
        span(5, instrumentation_scope=OTHER_SCOPE, attributes={}),
        span(6, instrumentation_scope=None),
    ]
    assert decoded(encode_request(spans)) == encode_spans(spans)


def test_what_it_does_not_encode_is_refused() -> None:
    with pytest.raises(Unencodable):
        encode_request([span(1, events=[Event("e", {})])])
    with pytest.raises(Unencodable):
        encode_request([span(1, attributes={"list": [1, 2]})])
