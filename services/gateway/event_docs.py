"""`GET /asyncapi.json`: the public event contract, FastStream's AsyncAPI document with msgspec
payload schemas (FastStream derives schemas from pydantic models; Heym's events are msgspec)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import msgspec
from faststream.nats import NatsBroker
from faststream.specification import AsyncAPI
from litestar import Controller, get

from contracts.catalog import channels
from libs.service.context import VERSION


def _ref_template(name: str) -> str:
    return f"#/components/schemas/{name}"


@cache
def event_contract() -> dict[str, Any]:
    broker = NatsBroker("nats://127.0.0.1:4222")  # never connected: used for the document only
    chans = channels()
    for ch in chans:
        broker.publisher(
            re.sub(r"\{[^}]+\}", "*", ch.address),
            title=ch.name,
            description=f"{ch.description} Written by the {ch.writer}.",
        )
    doc: dict[str, Any] = (
        AsyncAPI(
            broker,
            title="Heym run events",
            version=VERSION,
            description=(
                "Every run is an ordered log of event batches on the JetStream stream HEYM_RUNS. "
                "Each message body is a JSON array of events tagged by `type`; headers carry "
                "Nats-Msg-Id, Heym-Correlation-Id, Heym-Causation-Id and traceparent."
            ),
            schema_version="3.0.0",
        )
        .to_specification()
        .to_jsonable()
    )
    all_types = sorted({t for ch in chans for t in ch.events}, key=lambda t: t.__name__)
    (_, components) = msgspec.json.schema_components(
        all_types, ref_template=_ref_template("{name}")
    )
    schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(components)
    for ch in chans:
        schemas[f"{ch.name}:Message:Payload"] = {
            "type": "array",
            "description": "One event batch: the events of one decision, in order.",
            "items": {"oneOf": [{"$ref": _ref_template(t.__name__)} for t in ch.events]},
        }
    return doc


class EventDocsController(Controller):
    path = "/asyncapi.json"
    tags = ["events"]

    @get("", summary="The public event contract (AsyncAPI 3.0)", exclude_from_auth=True)
    async def asyncapi(self) -> dict[str, Any]:
        return event_contract()
