"""Trace contexts, derived span ids, the run's sampling decision, and reading the settings."""

from __future__ import annotations

import pytest

from libs import telemetry
from libs.config import SettingsError, load_settings
from libs.telemetry import TraceContext
from libs.telemetry.config import (
    TelemetryConfigError,
    configuration,
    parse_exporting,
    parse_headers,
    shown_endpoint,
)
from libs.telemetry.context import node_span_id, run_span_id, tool_span_id, trace_id_for

pytestmark = pytest.mark.unit

HEADER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_traceparent_round_trip_and_refusals() -> None:
    ctx = TraceContext.parse(HEADER)
    assert ctx == TraceContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True)
    assert ctx.header() == HEADER
    assert TraceContext.parse(HEADER[:-2] + "00") == TraceContext(ctx.trace_id, ctx.span_id, False)
    # a future version may carry more fields; version 00 may not
    assert TraceContext.parse("01" + HEADER[2:] + "-extra") is not None
    for bad in (
        None,
        "",
        "garbage",
        HEADER + "-extra",
        "ff" + HEADER[2:],
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        HEADER.upper(),
    ):
        assert TraceContext.parse(bad) is None, bad


def test_span_ids_are_derived_from_the_logs_ids() -> None:
    # the same work has the same id in every process, different work a different one
    assert run_span_id("r1") == run_span_id("r1")
    assert node_span_id("r1", "i1") == node_span_id("r1", "i1")
    ids = {
        run_span_id("r1"),
        run_span_id("r2"),
        node_span_id("r1", "i1"),
        node_span_id("r1", "i2"),
        node_span_id("r2", "i1"),
        tool_span_id("r1", "i1", "call_1"),
        tool_span_id("r1", "i1", "call_2"),
    }
    assert len(ids) == 7
    assert all(0 < i < 2**64 for i in ids)
    assert 0 < trace_id_for("r1") < 2**128


def test_a_run_without_tracing_or_caller_has_no_context() -> None:
    telemetry.shutdown()
    assert telemetry.new_run_context("r1", None) is None


def test_a_run_without_tracing_still_continues_its_callers_trace() -> None:
    telemetry.shutdown()
    ctx = telemetry.new_run_context("r1", HEADER)
    assert ctx is not None
    assert ctx.header() == f"00-4bf92f3577b34da6a3ce929d0e0e4736-{run_span_id('r1'):016x}-01"


def test_headers_are_parsed_and_their_values_never_shown() -> None:
    assert parse_headers("authorization=Bearer abc, X-Team=ops%20one,") == {
        "authorization": "Bearer abc",
        "x-team": "ops one",
    }
    with pytest.raises(TelemetryConfigError) as caught:
        parse_headers("authorization=Bearer s3cret,justavalue-s3cret")
    assert "s3cret" not in str(caught.value)
    assert "entry 2" in str(caught.value)


def test_settings_and_endpoints() -> None:
    env = {
        "HEYM_OTEL_ENABLED": "true",
        "HEYM_OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:pw@collector.example:4318/",
        "HEYM_OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer s3cret",
        "HEYM_OTEL_TRACES_SAMPLER_RATIO": "0.25",
        "HEYM_OTEL_CAPTURE_NODE_IO": "1",
    }
    settings = load_settings(env)
    assert settings.otel_enabled is True
    assert settings.otel_service_name == "heym"
    assert settings.otel_sampler_ratio == 0.25
    assert settings.otel_capture_node_io is True
    exporting = parse_exporting(settings)
    assert exporting.traces_url == "https://user:pw@collector.example:4318/v1/traces"
    assert exporting.shown_endpoint == "https://collector.example:4318"
    shown = configuration(settings)
    assert shown["headers"] == ["authorization"]
    assert "s3cret" not in str(shown)
    assert "pw" not in str(shown)
    defaults = load_settings({})
    assert defaults.otel_enabled is False
    assert defaults.otel_endpoint == ""
    assert defaults.otel_sampler_ratio == 1.0
    assert defaults.otel_capture_node_io is False
    with pytest.raises(SettingsError, match="HEYM_OTEL_TRACES_SAMPLER_RATIO"):
        load_settings({"HEYM_OTEL_TRACES_SAMPLER_RATIO": "1.5"})
    with pytest.raises(SettingsError, match="HEYM_OTEL_ENABLED"):
        load_settings({"HEYM_OTEL_ENABLED": "maybe"})
    for bad in ("", "collector:4318", "ftp://collector", "http://", "http://host:0"):
        with pytest.raises(TelemetryConfigError):
            parse_exporting(load_settings({"HEYM_OTEL_EXPORTER_OTLP_ENDPOINT": bad}))
    assert shown_endpoint("http://a:b@h:1/p?q=s") == "http://h:1/p"
