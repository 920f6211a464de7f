"""The health request/reply every service answers on `heym.svc.<service>.health`."""

from __future__ import annotations

from typing import Literal

import msgspec


class HealthReply(msgspec.Struct, frozen=True, kw_only=True):
    service: str
    instance: str
    pid: int
    state: Literal["healthy", "degraded", "starting", "stopping"]
    started_at_ms: int
    version: str
    details: dict[str, str] = msgspec.field(default_factory=dict)
