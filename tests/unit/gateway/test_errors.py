"""The gateway's error edge: request ids, NUL refused before routing, 500s logged with an id."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from litestar import Litestar, Request, get
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR
from litestar.testing import TestClient

from services.gateway.errors import RequestGuard, internal_error

pytestmark = pytest.mark.unit


@get("/boom")
async def boom() -> None:
    raise RuntimeError("something nobody expected")


@get("/echo/{value:str}")
async def echo(request: Request[Any, Any, Any]) -> dict[str, str]:
    return {"value": str(request.path_params["value"])}


def app() -> Litestar:
    return Litestar(
        route_handlers=[boom, echo],
        middleware=[RequestGuard()],
        exception_handlers={HTTP_500_INTERNAL_SERVER_ERROR: internal_error},
    )


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_an_unexpected_error_is_a_500_logged_with_its_request_id() -> None:
    # A handler of its own: the app's logging setup may replace the root logger's handlers.
    kept = _Kept()
    logger = logging.getLogger("services.gateway.errors")
    logger.addHandler(kept)
    try:
        with TestClient(app()) as client:
            r = client.get("/boom", headers={"X-Request-Id": "req-42"})
    finally:
        logger.removeHandler(kept)
    assert r.status_code == 500
    assert r.json() == {
        "status_code": 500,
        "detail": "internal server error",
        "request_id": "req-42",
    }
    assert r.headers["x-request-id"] == "req-42"
    [record] = [rec for rec in kept.records if "req-42" in rec.getMessage()]
    assert "something nobody expected" in record.getMessage()
    assert record.exc_info is not None


def test_every_answer_carries_a_request_id() -> None:
    with TestClient(app()) as client:
        mine = client.get("/echo/x", headers={"X-Request-Id": "abc.1"})
        made = client.get("/echo/x", headers={"X-Request-Id": "no spaces or <tags> please"})
    assert mine.headers["x-request-id"] == "abc.1"
    assert len(made.headers["x-request-id"]) == 32


@pytest.mark.parametrize("path", ["/echo/a%00b", "/echo/x?q=a%00b", "/echo/x?a%00=1"])
def test_nul_in_the_path_or_query_is_refused_before_routing(path: str) -> None:
    with TestClient(app()) as client:
        r = client.get(path)
    assert r.status_code == 400
    assert "NUL" in r.json()["detail"]
