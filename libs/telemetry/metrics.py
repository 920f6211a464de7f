"""OTLP metrics (`HEYM_OTEL_METRICS_ENABLED`): runs by status, run and node durations, model
tokens by model, tool calls by source and status, event-log append latency. Exported in the
background every `HEYM_OTEL_METRICS_INTERVAL_S`; recording one is a few dictionary lookups."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from libs.telemetry.config import Exporting

# Explicit buckets in milliseconds: event-log appends are fast (an fsync), nodes and runs
# range from microseconds to hours.
_APPEND_BUCKETS_MS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0)


class Meters:
    def __init__(self, provider: Any) -> None:
        meter = provider.get_meter("heym", "0.1.0")
        self._provider = provider
        self._runs = meter.create_counter("heym.runs", unit="{run}", description="Runs ended")
        self._run_ms = meter.create_histogram(
            "heym.run.duration", unit="ms", description="Run duration, request to end"
        )
        self._node_ms = meter.create_histogram(
            "heym.node.duration", unit="ms", description="Node invocation duration"
        )
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Model tokens per request"
        )
        self._tools = meter.create_counter(
            "heym.agent.tool.calls", unit="{call}", description="Agent tool calls ended"
        )
        self._append_ms = meter.create_histogram(
            "heym.eventlog.append.duration",
            unit="ms",
            description="Event-log append latency (publish to acknowledgement)",
            explicit_bucket_boundaries_advisory=_APPEND_BUCKETS_MS,
        )

    @classmethod
    def start(cls, exporting: Exporting, resource: Any) -> Meters:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(
                endpoint=exporting.metrics_url, headers=exporting.headers, timeout=5
            ),
            export_interval_millis=exporting.metrics_interval_s * 1000,
            export_timeout_millis=10_000,
        )
        provider = MeterProvider(metric_readers=[reader], resource=resource, shutdown_on_exit=False)
        return cls(provider)

    def shutdown(self) -> None:
        self._provider.shutdown(timeout_millis=3000)

    def run(self, status: str, duration_ms: float) -> None:
        self._runs.add(1, {"heym.workflow.status": status})
        self._run_ms.record(duration_ms, {"heym.workflow.status": status})

    def node(self, node_type: str, status: str, duration_ms: float) -> None:
        self._node_ms.record(duration_ms, {"heym.node.type": node_type, "heym.node.status": status})

    def tokens(self, model: str, input_tokens: int, output_tokens: int) -> None:
        base = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
        self._tokens.record(input_tokens, {**base, "gen_ai.token.type": "input"})
        self._tokens.record(output_tokens, {**base, "gen_ai.token.type": "output"})

    def tool(self, source: str, status: str) -> None:
        self._tools.add(1, {"heym.agent.tool.source": source, "heym.agent.tool.status": status})

    def append(self, duration_ms: float) -> None:
        self._append_ms.record(duration_ms)
