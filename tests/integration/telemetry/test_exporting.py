"""The telemetry of one process against a real OTLP/HTTP receiver: off builds nothing; on,
spans keep their derived ids and recorded times; a stalled collector costs a counter, logs
once and never blocks the caller."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk import trace as sdk_trace

from contracts.nodes import NodeCompleted
from contracts.runs import RunCompleted, RunRequested
from libs import telemetry
from libs.config import load_settings
from libs.testing.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.integration

RUN = "3f0c9d2e8b7a4c1d9e0f1a2b3c4d5e6f"


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    telemetry.shutdown()
    yield
    telemetry.shutdown()


@pytest.fixture
def span_objects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every SDK span (live `Span` or `ReadableSpan` record) made while the test runs."""
    made: list[Any] = []
    original = sdk_trace.ReadableSpan.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(sdk_trace.ReadableSpan, "__init__", counting)
    return made


def settings(endpoint: str, **extra: str) -> Any:
    return load_settings(
        {
            "HEYM_OTEL_ENABLED": "true",
            "HEYM_OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "HEYM_OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer s3cret-token",
            "HEYM_OTEL_EXPORT_DELAY_MS": "50",
            **extra,
        }
    )


def one_run() -> None:
    """What the services do for a two-node run: its context, node spans, the run span."""
    request = RunRequested(workflow_id="wf", nodes=[{"id": "a"}, {"id": "b"}], requested_at_ms=1)
    run = telemetry.new_run_context(RUN, None)
    request = RunRequested(
        workflow_id="wf",
        nodes=request.nodes,
        requested_at_ms=int(time.time() * 1000) - 5,
        run_traceparent=telemetry.header_of(run),
    )
    now = int(time.time() * 1000)
    for inv in ("i1", "i2"):
        done = NodeCompleted(
            invocation_id=inv,
            node_id=inv,
            node_label=f"n{inv}",
            node_type="set",
            status="success",
            started_at_ms=now - 2,
            finished_at_ms=now,
        )
        telemetry.node_span(RUN, done, telemetry.node_context(run, RUN, inv))
    telemetry.workflow_span(
        RUN,
        request,
        run,
        started_at_ms=now - 4,
        done=RunCompleted(status="success", finished_at_ms=now + 1),
    )


def otel_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("Otel")]


def test_off_builds_no_span_and_starts_no_thread(span_objects: list[Any]) -> None:
    with OtlpReceiver() as receiver:
        off = load_settings({"HEYM_OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        telemetry.configure(off, service="scheduler", instance="scheduler-test")
        one_run()
        time.sleep(0.2)
        status = telemetry.status()
    assert span_objects == []
    assert otel_threads() == []
    assert status["enabled"] is False
    assert status["spans_started"] == 0
    assert receiver.requests == []


def test_on_exports_spans_with_derived_ids(span_objects: list[Any]) -> None:
    with OtlpReceiver() as receiver:
        telemetry.configure(settings(receiver.url), service="scheduler", instance="sched-1")
        assert otel_threads()
        one_run()
        telemetry.shutdown()  # flushes
        spans = list(receiver.spans)
        headers = receiver.requests[0][1]
    assert len(span_objects) == 3
    root = next(s for s in spans if s.name == "heym.workflow.execute")
    assert root.span_id == f"{telemetry.run_span_id(RUN):016x}"
    assert root.parent_span_id == ""
    nodes = [s for s in spans if s.name == "heym.node.execute"]
    assert {s.span_id for s in nodes} == {
        f"{telemetry.node_span_id(RUN, inv):016x}" for inv in ("i1", "i2")
    }
    assert all(s.parent_span_id == root.span_id for s in nodes)
    assert all(s.trace_id == root.trace_id for s in nodes)
    assert root.resource["service.instance.id"] == "sched-1"
    assert root.resource["heym.component"] == "scheduler"
    assert headers["authorization"] == "Bearer s3cret-token"


def test_ratio_zero_makes_no_span_object(span_objects: list[Any]) -> None:
    with OtlpReceiver() as receiver:
        ratio0 = settings(receiver.url, HEYM_OTEL_TRACES_SAMPLER_RATIO="0")
        telemetry.configure(ratio0, service="scheduler", instance="sched-1")
        one_run()
        telemetry.shutdown()
        assert receiver.spans == []
    assert span_objects == []


def test_a_stalled_collector_drops_counts_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    receiver = OtlpReceiver()
    receiver.start()
    receiver.mode = "hang"
    try:
        telemetry.configure(
            settings(receiver.url), service="scheduler", instance="sched-1", max_queue=8
        )
        one_run()
        deadline = time.monotonic() + 20
        while not receiver.hanging and time.monotonic() < deadline:
            time.sleep(0.01)
        assert receiver.hanging  # the first export is stuck on the collector...
        for _ in range(39):
            one_run()  # 3 spans each
        during = telemetry.status()["exporter"]
        while telemetry.status()["exporter"] != "failing" and time.monotonic() < deadline:
            time.sleep(0.05)
        status = telemetry.status()
    finally:
        receiver.stop()
        telemetry.shutdown(wait_s=1)
    # ... and every span was handed over before that export even failed (it waits 5 s):
    # the caller never waits for the collector
    assert during == "idle"
    assert status["exporter"] == "failing"
    assert status["dropped_spans"] >= 100
    assert status["spans_started"] == 120
    failures = [r for r in caplog.records if "span export to" in r.getMessage()]
    assert len(failures) == 1
    assert "s3cret" not in failures[0].getMessage()
    # the exporter's own per-batch complaints are not printed
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]
