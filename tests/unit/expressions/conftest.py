"""Shared contexts for the expression engine tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from libs.expressions import ExpressionContext, build_context

FIXED_NOW = datetime(2024, 1, 15, 13, 30, 5, tzinfo=UTC)

USER_INPUT: dict[str, Any] = {
    "headers": {"user-agent": "UA-test", "x-api-key": "k-1"},
    "query": {"page": "2"},
    "body": {"text": "5", "name": "Ada"},
    "text": "hello world",
    "name": "Ada",
}

UPSTREAM: dict[str, Any] = {
    "userInput": USER_INPUT,
    "data": {
        "items": "from-json-key",
        "count": 5,
        "price": 2.5,
        "list": [3, 1, 2],
        "active": True,
        "meta": {"key": "val"},
        "nothing": None,
        "title": "  Hello World  ",
    },
    "node": {"keys": [10, 20], "values": {"a": 1}, "entries": "e", "map": "m", "filter": "f"},
    "cfg": {"a": 1, "b": 2},
    "row": {"colA": "foo", "colB": "bar", "colC": None},
    "users": [
        {"name": "Ann", "age": 31, "id": 1, "active": True},
        {"name": "Bob", "age": 25, "id": 2, "active": False},
        {"name": "Cid", "age": 40, "id": 1, "active": True},
    ],
    "a": {"x": 1, "ok": True, "len": "abc1def1gh", "score": 7},
    "b": {"y": 3, "ok": False, "score": 9},
}


@pytest.fixture
def ctx() -> ExpressionContext:
    return build_context(
        {"userInput": USER_INPUT},
        UPSTREAM,
        vars={"counter": 3, "records": ["r1"]},
        global_vars={"apiBase": "https://api.example.com", "counter": 1},
        credentials={"MyToken": "Bearer abc"},
        now=FIXED_NOW,
        timezone="Europe/Berlin",
        random_seed=7,
    )
