"""The `HEYM_OTEL_*` settings checked and shown: the endpoint (an http(s) URL), the exporter
headers (`k=v,...`; their values are credentials: never in an error, a log or an API), and the
view of them the status API and `heym up` may display."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from libs.config import Settings


class TelemetryConfigError(ValueError):
    """The OTel settings cannot be used (bad endpoint or headers); tracing stays off."""


@dataclass(frozen=True)
class Exporting:
    """Where telemetry goes: validated endpoint, headers (values never shown), switches."""

    endpoint: str
    headers: dict[str, str]
    service_name: str
    ratio: float
    capture_io: bool
    metrics: bool
    metrics_interval_s: float
    delay_ms: int

    @property
    def traces_url(self) -> str:
        return f"{self.endpoint}/v1/traces"

    @property
    def metrics_url(self) -> str:
        return f"{self.endpoint}/v1/metrics"

    @property
    def shown_endpoint(self) -> str:
        return shown_endpoint(self.endpoint)


def shown_endpoint(endpoint: str) -> str:
    """The endpoint as it may be displayed: without user info (a password in the URL)."""
    try:
        parts = urlsplit(endpoint)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "(invalid endpoint)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def parse_exporting(settings: Settings) -> Exporting:
    """Validate the OTel settings (raises `TelemetryConfigError` naming the problem, never a
    header value)."""
    raw = settings.otel_endpoint.strip()
    if not raw:
        raise TelemetryConfigError("HEYM_OTEL_EXPORTER_OTLP_ENDPOINT is empty")
    try:
        parts = urlsplit(raw)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as exc:
        raise TelemetryConfigError(
            f"HEYM_OTEL_EXPORTER_OTLP_ENDPOINT is not a URL: {exc}"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise TelemetryConfigError(
            "HEYM_OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL such as "
            f"http://collector:4318, got {shown_endpoint(raw)!r}"
        )
    return Exporting(
        endpoint=raw.rstrip("/"),
        headers=parse_headers(settings.otel_headers),
        service_name=settings.otel_service_name or "heym",
        ratio=settings.otel_sampler_ratio,
        capture_io=settings.otel_capture_node_io,
        metrics=settings.otel_metrics_enabled,
        metrics_interval_s=max(0.1, settings.otel_metrics_interval_s),
        delay_ms=settings.otel_export_delay_ms,
    )


def parse_headers(raw: str) -> dict[str, str]:
    """`k=v,k2=v2` (values may be URL-encoded, as OTEL_EXPORTER_OTLP_HEADERS)."""
    headers: dict[str, str] = {}
    for number, pair in enumerate(raw.split(","), start=1):
        if not pair.strip():
            continue
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name or any(c.isspace() for c in name):
            raise TelemetryConfigError(
                f"HEYM_OTEL_EXPORTER_OTLP_HEADERS: entry {number} is not key=value"
            )
        headers[name.lower()] = unquote(value.strip())
    return headers


def configuration(settings: Settings) -> dict[str, Any]:
    """The OTel settings as they may be shown: the endpoint without user info, the header
    names only (their values are credentials)."""
    try:
        names = sorted(parse_headers(settings.otel_headers))
    except TelemetryConfigError:
        names = []
    endpoint = shown_endpoint(settings.otel_endpoint.strip()) if settings.otel_endpoint else ""
    return {
        "enabled": settings.otel_enabled,
        "endpoint": endpoint,
        "traces_endpoint": f"{endpoint.rstrip('/')}/v1/traces" if endpoint else "",
        "headers": names,
        "service_name": settings.otel_service_name,
        "sampler_ratio": settings.otel_sampler_ratio,
        "capture_node_io": settings.otel_capture_node_io,
        "metrics_enabled": settings.otel_metrics_enabled,
    }
