"""sanitize(): redaction by key and in text, string/depth/width limits, cycles, no mutation."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from libs.observability.redaction import (
    CYCLE,
    MAX_DEPTH,
    REDACTED,
    TRUNCATED,
    is_sensitive_key,
    sanitize,
)

pytestmark = pytest.mark.unit

API_KEY = "sk-proj-Zq8vN3xLmP2kR7tY9wB4cD6f"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.c2lnbmF0dXJlLXZhbHVl"
OPAQUE_BEARER = "gho16C7e42F292c6912E7710c838347Ae178B4a"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAxyz\nabc123==\n-----END RSA PRIVATE KEY-----"
)


def dumped(value: Any) -> str:
    return json.dumps(value)


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "X-Api-Key",
        "Authorization",
        "cookie",
        "Set-Cookie",
        "password",
        "passwd",
        "secret",
        "private_key",
        "access_token",
        "refresh_token",
        "client_secret",
        "token",
        "github_token",
        "webhook_secret",
        "db_password",
    ],
)
def test_sensitive_keys(key: str) -> None:
    assert is_sensitive_key(key)
    assert sanitize({key: "value-123"}) == {key: REDACTED}


@pytest.mark.parametrize(
    "key", ["tokens", "prompt_tokens", "completion_tokens", "max_tokens", "tokenizer", "name"]
)
def test_counters_and_ordinary_keys_are_kept(key: str) -> None:
    assert not is_sensitive_key(key)
    assert sanitize({key: 42}) == {key: 42}


def test_secrets_inside_tool_arguments_and_results_never_survive() -> None:
    record = {
        "name": "http_request",
        "arguments": json.dumps(
            {"url": "https://api.example.com", "headers": {"Authorization": f"Bearer {BEARER}"}}
        ),
        "result": {
            "echo": f"called with key {API_KEY}",
            "raw_headers": f"authorization: Bearer {OPAQUE_BEARER}\ncontent-type: json",
            "nested": json.dumps({"config": {"api_key": "plain-value-77"}}),
        },
        "usage": {"prompt_tokens": 120, "completion_tokens": 7},
    }
    out = sanitize(record)
    text = dumped(out)
    for secret in (API_KEY, BEARER, OPAQUE_BEARER, "plain-value-77"):
        assert secret not in text
    assert out["usage"] == {"prompt_tokens": 120, "completion_tokens": 7}
    arguments = json.loads(out["arguments"])
    assert arguments["url"] == "https://api.example.com"
    assert arguments["headers"] == {"Authorization": REDACTED}


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"curl -H 'Authorization: Bearer {OPAQUE_BEARER}'", OPAQUE_BEARER),
        ("Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
        ("password=hunter2&user=bob", "hunter2"),
        ('{"client_secret": "cs_live_abc"}', "cs_live_abc"),
        (f"token is {BEARER}", BEARER),
        (f"here: {PEM}\nthanks", "MIIEowIBAAKCAQEAxyz"),
        (f"use {API_KEY} for it", API_KEY),
        ("ghp_0123456789abcdefghijABCDEFGHIJ0123 leaked", "ghp_0123456789abcdefghij"),
    ],
)
def test_credentials_in_text_are_masked(text: str, secret: str) -> None:
    out = sanitize({"note": text})["note"]
    assert secret not in out
    assert "REDACTED" in out


def test_ordinary_prose_is_left_alone() -> None:
    text = "Basic authentication uses tokens: 3 of them, prompt_tokens=12."
    assert sanitize(text) == text


def test_long_strings_are_truncated_with_the_marker() -> None:
    out = sanitize({"result": "x" * 1_000_000})["result"]
    assert out == "x" * 4096 + TRUNCATED
    assert sanitize("abcdef", max_string=3) == "abc" + TRUNCATED


def test_a_secret_at_the_cut_is_not_partially_leaked() -> None:
    text = "a" * 4090 + " " + API_KEY + " tail" + "b" * 10_000
    assert API_KEY[:6] not in sanitize(text)


def test_depth_limit() -> None:
    deep: dict[str, Any] = {"leaf": 1}
    for _ in range(10):
        deep = {"down": deep}
    out = sanitize(deep, max_depth=3)
    assert out == {"down": {"down": {"down": MAX_DEPTH}}}
    assert sanitize([[1]], max_depth=1) == [MAX_DEPTH]


def test_cycles_are_marked_but_shared_values_are_copied() -> None:
    shared = {"v": 1}
    loop: dict[str, Any] = {"name": "loop", "shared_a": shared, "shared_b": shared}
    loop["self"] = loop
    items: list[Any] = [1]
    items.append(items)
    out = sanitize(loop)
    assert out == {"name": "loop", "shared_a": {"v": 1}, "shared_b": {"v": 1}, "self": CYCLE}
    assert sanitize(items) == [1, CYCLE]


def test_wide_containers_keep_a_bounded_prefix_and_say_how_much_was_dropped() -> None:
    out = sanitize({"items": list(range(150)), "map": {f"k{i}": i for i in range(250)}})
    assert out["items"][:100] == list(range(100))
    assert out["items"][100] == f"{TRUNCATED} 50 more items"
    assert len(out["items"]) == 101
    assert len(out["map"]) == 201
    assert out["map"][TRUNCATED] == "50 more keys"


def test_non_json_values_become_json_able() -> None:
    @dataclasses.dataclass
    class Call:
        name: str
        api_key: str

    out = sanitize({"b": b"\x00\x01", "nan": float("nan"), "call": Call("x", "k"), "s": {3}})
    assert out == {
        "b": "[2 bytes]",
        "nan": "nan",
        "call": {"name": "x", "api_key": REDACTED},
        "s": [3],
    }
    json.dumps(out, allow_nan=False)


def test_input_is_never_mutated() -> None:
    original = {
        "arguments": json.dumps({"api_key": API_KEY}),
        "result": {"password": "p", "big": "y" * 10_000, "list": list(range(200))},
    }
    snapshot = copy.deepcopy(original)
    sanitize(original)
    assert original == snapshot
