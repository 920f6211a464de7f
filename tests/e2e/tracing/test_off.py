"""Tracing off (the default, as in the shared e2e system): no span is created and no exporter
thread runs in any service, while a caller's `traceparent` still reaches HTTP nodes."""

from __future__ import annotations

import msgspec
import nats
import pytest

from contracts import subjects
from contracts.health import HealthReply
from libs.testing.http_target import HttpTarget
from tests.e2e.agents.helpers import create, e, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


async def health_details(system: System) -> dict[str, dict[str, str]]:
    nc = await nats.connect(system.nats_url)
    try:
        out = {}
        for service in subjects.SERVICES:
            msg = await nc.request(subjects.health(service), b"", timeout=5)
            out[service] = msgspec.json.decode(msg.data, type=HealthReply).details
        return out
    finally:
        await nc.close()


async def test_tracing_off_creates_no_span_and_starts_no_exporter(system: System) -> None:
    _, key = await system.new_user()
    async with HttpTarget() as target, system.client(key) as c:
        wid = await create(
            c,
            [
                n("in", "textInput", "start"),
                n("s", "set", "step", mappings=[{"key": "v", "value": "1"}]),
                n("h", "http", "call", curl=f"curl {target.url}/x"),
            ],
            [e("in", "s"), e("s", "h")],
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute", json={"text": "go"}, headers={"traceparent": CALLER}
        )
        assert r.status_code == 200, r.text
        sent = target.requests[0]["headers"]["traceparent"]
    details = await health_details(system)
    for service, d in details.items():
        assert d["otel"] == "off", (service, d)
        assert d["otel_spans"] == "0", (service, d)
        assert d["otel_threads"] == "0", (service, d)
    # W3C: a service that does not trace still passes the caller's trace on
    assert sent.split("-")[1] == CALLER.split("-")[1]
