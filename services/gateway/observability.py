"""`GET /api/settings/observability`: where traces go and how each service's exporter does
(read-only; the exporter headers' values are never returned, only their names)."""

from __future__ import annotations

import asyncio

import msgspec
import nats.errors
from litestar import Controller, get
from litestar.datastructures import State
from litestar.di import Provide

from contracts import subjects
from contracts.health import HealthReply
from libs import telemetry
from libs.accounts import AccountUser
from services.gateway.auth import required_user

_decode = msgspec.json.Decoder(HealthReply).decode


class ExporterState(msgspec.Struct, frozen=True, kw_only=True):
    """One service's exporter: `off`, `idle` (nothing sent yet), `ok`, `failing`, or
    `unreachable` (the service did not answer)."""

    state: str
    spans_started: int = 0
    exported_spans: int = 0
    dropped_spans: int = 0
    failed_exports: int = 0
    last_error: str | None = None
    disabled_reason: str | None = None


class Observability(msgspec.Struct, frozen=True, kw_only=True):
    enabled: bool
    endpoint: str
    traces_endpoint: str
    headers: list[str]
    service_name: str
    sampler_ratio: float
    capture_node_io: bool
    metrics_enabled: bool
    exporter_status: str
    dropped_spans: int
    services: dict[str, ExporterState]


async def _exporter(state: State, service: str) -> ExporterState:
    try:
        msg = await state.ctx.nc.request(subjects.health(service), b"", timeout=1.5)
        details = _decode(msg.data).details
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError, msgspec.DecodeError):
        return ExporterState(state="unreachable")
    if details.get("otel") != "on":
        return ExporterState(state="off", disabled_reason=details.get("otel_disabled"))
    return ExporterState(
        state=details.get("otel_exporter", "idle"),
        spans_started=int(details.get("otel_spans", "0")),
        exported_spans=int(details.get("otel_exported_spans", "0")),
        dropped_spans=int(details.get("otel_dropped_spans", "0")),
        failed_exports=int(details.get("otel_failed_exports", "0")),
        last_error=details.get("otel_last_error"),
    )


def _overall(services: dict[str, ExporterState]) -> str:
    """`failing` or `unreachable` if any service is; `off` if all are; `ok` once a service
    has exported (a service with nothing to trace stays idle), else `idle`."""
    states = {s.state for s in services.values()}
    for worst in ("failing", "unreachable"):
        if worst in states:
            return worst
    if states == {"off"}:
        return "off"
    return "ok" if "ok" in states else "idle"


class ObservabilityController(Controller):
    path = "/api/settings/observability"
    tags = ["settings"]
    dependencies = {"user": Provide(required_user)}

    @get("", summary="Tracing settings and each service's exporter health (read-only)")
    async def show(self, state: State, user: AccountUser) -> Observability:
        found = await asyncio.gather(*(_exporter(state, s) for s in subjects.SERVICES))
        services = dict(zip(subjects.SERVICES, found, strict=True))
        return Observability(
            **telemetry.configuration(state.settings),
            exporter_status=_overall(services),
            dropped_spans=sum(s.dropped_spans for s in services.values()),
            services=services,
        )
