"""`GET /api/health`: each service's state, gathered over NATS request/reply."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import nats.errors
from litestar import Controller, Response, get
from litestar.datastructures import State

from contracts import subjects
from contracts.health import HealthReply
from libs.service import ServiceContext

_decode = msgspec.json.Decoder(HealthReply).decode


class ServiceState(msgspec.Struct, frozen=True, kw_only=True):
    state: str
    instance: str | None = None
    pid: int | None = None
    version: str | None = None
    error: str | None = None


class HealthReport(msgspec.Struct, frozen=True, kw_only=True):
    status: str
    services: dict[str, ServiceState]


async def gather_health(ctx: ServiceContext, timeout: float = 1.5) -> HealthReport:
    async def ask(service: str) -> ServiceState:
        try:
            msg = await ctx.nc.request(subjects.health(service), b"", timeout=timeout)
            reply = _decode(msg.data)
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
            return ServiceState(state="unreachable", error="no reply over NATS")
        except msgspec.DecodeError as exc:
            return ServiceState(state="unreachable", error=f"bad health reply: {exc}")
        return ServiceState(
            state=reply.state, instance=reply.instance, pid=reply.pid, version=reply.version
        )

    states = await asyncio.gather(*(ask(s) for s in subjects.SERVICES))
    services = dict(zip(subjects.SERVICES, states, strict=True))
    healthy = all(s.state == "healthy" for s in services.values())
    return HealthReport(status="ok" if healthy else "degraded", services=services)


class HealthController(Controller):
    path = "/api/health"
    tags = ["health"]

    @get("", summary="Each service's state, gathered over NATS", exclude_from_auth=True)
    async def health(self, state: State) -> Response[Any]:
        report = await gather_health(state.ctx)
        return Response(report, status_code=200 if report.status == "ok" else 503)
