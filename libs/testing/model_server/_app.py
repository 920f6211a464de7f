"""The Litestar app: OpenAI-compatible routes plus the `/_ledger` and `/_script` controls."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec
from litestar import Litestar, Request, Response, delete, get, post, put
from litestar.params import FromPath
from litestar.response import Stream

from libs.testing.model_server._engine import Engine, Outcome
from libs.testing.model_server._responses import error_body
from libs.testing.model_server._script import Script

JSON = "application/json"


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(msgspec.json.encode(body), status_code=status, media_type=JSON, headers=headers)


async def _waited(closing: asyncio.Event, seconds: float) -> bool:
    """Sleep `seconds`, but wake early when the server shuts down (returns False then), so a
    scripted hang never holds up stop()."""
    if seconds <= 0:
        return True
    try:
        await asyncio.wait_for(closing.wait(), timeout=seconds)
    except TimeoutError:
        return True
    return False


def build_app(engine: Engine, closing: asyncio.Event) -> Litestar:
    """An app serving `engine`; setting `closing` cuts every pending delay short."""

    async def send(outcome: Outcome) -> Response[Any]:
        if not await _waited(closing, outcome.delay):
            return _json(503, error_body("[model-server] shutting down", "server_error", 503))
        if outcome.events is not None:
            return Stream(outcome.events, media_type="text/event-stream", status_code=200)
        return _json(outcome.status, outcome.body, outcome.headers)

    @post("/v1/chat/completions", status_code=200)
    async def chat_completions(request: Request[Any, Any, Any]) -> Response[Any]:
        arrived = time.time()
        return await send(engine.chat(await request.body(), arrived=arrived))

    @get("/v1/models")
    async def list_models() -> Response[Any]:
        return await send(engine.models())

    @get("/v1/models/{model_id:path}")
    async def retrieve_model(model_id: FromPath[str]) -> Response[Any]:
        # A path parameter because model ids may contain slashes ("org/model").
        return await send(engine.model(model_id.lstrip("/")))

    @get("/_ledger")
    async def read_ledger() -> Response[bytes]:
        return _json(200, engine.ledger())

    @delete("/_ledger", status_code=204)
    async def clear_ledger() -> None:
        engine.clear_ledger()

    @put("/_script")
    async def replace_script(request: Request[Any, Any, Any]) -> Response[bytes]:
        try:
            script = Script.from_json(await request.body())
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return _json(400, error_body(f"invalid script: {exc}", "invalid_request_error"))
        engine.replace_script(script)
        return _json(200, {"rules": len(script.rules)})

    @get("/_health")
    async def health() -> Response[bytes]:
        return _json(200, {"status": "ok"})

    handlers = [
        chat_completions,
        list_models,
        retrieve_model,
        read_ledger,
        clear_ledger,
        replace_script,
        health,
    ]
    # No OpenAPI schema and no logging setup: this is a test double that must not touch the
    # host process's logging configuration.
    return Litestar(route_handlers=handlers, openapi_config=None, logging_config=None)
