"""Credential helpers: key hints, client base URLs, a repr that hides the key, body validation."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.exceptions import HTTPException

from libs.secrets import GOOGLE_OPENAI_BASE_URL, ResolvedCredential, client_base_url, key_hint
from services.gateway.credential_store import CredentialRow
from services.gateway.credentials import changed_fields, new_fields

pytestmark = pytest.mark.unit

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz"


def cred(type: str, base_url: str | None = None) -> ResolvedCredential:
    return ResolvedCredential(id="c1", name="n", type=type, base_url=base_url, api_key=KEY)


@pytest.mark.parametrize(
    ("api_key", "hint"),
    [
        ("sk-abcdefghijklmnopwxyz", "sk-...wxyz"),
        ("abcdefghijkl", "abc...ijkl"),  # exactly 12: shown
        ("abcdefghijk", "****"),  # 11: hidden
        ("short", "****"),
        ("", "****"),
    ],
)
def test_key_hint(api_key: str, hint: str) -> None:
    assert key_hint(api_key) == hint


def test_key_hint_never_reveals_more_than_seven_characters() -> None:
    hint = key_hint(KEY)
    assert len(hint.replace("...", "")) == 7
    assert hint == f"{KEY[:3]}...{KEY[-4:]}"


@pytest.mark.parametrize(
    ("type", "base_url", "expected"),
    [
        ("openai", None, None),
        ("openai", "https://ignored.example", None),
        ("google", None, GOOGLE_OPENAI_BASE_URL),
        ("custom", "http://localhost:11434", "http://localhost:11434/v1"),
        ("custom", "http://localhost:11434/", "http://localhost:11434/v1"),
        ("custom", "https://api.example.com/v1", "https://api.example.com/v1"),
        ("custom", "https://api.example.com/v1/", "https://api.example.com/v1"),
        ("custom", "https://api.example.com/openai", "https://api.example.com/openai/v1"),
        ("custom", "https://api.example.com/v10", "https://api.example.com/v10/v1"),
    ],
)
def test_client_base_url(type: str, base_url: str | None, expected: str | None) -> None:
    assert client_base_url(cred(type, base_url)) == expected


def test_resolved_credential_hides_the_key() -> None:
    c = cred("openai")
    for text in (repr(c), str(c), f"{c}", f"{c!r}", repr([c]), str(c.__rich_repr__())):
        assert KEY not in text
        assert "hidden" in text
    assert c.api_key == KEY


def _expect_422(body: dict[str, Any], field: str, current: CredentialRow | None = None) -> str:
    with pytest.raises(HTTPException) as info:
        changed_fields(body, current) if current else new_fields(body)
    assert info.value.status_code == 422
    assert isinstance(info.value.extra, list)
    assert field in {p["field"] for p in info.value.extra}
    return str(info.value.detail)


def test_new_fields_accepts_a_valid_body() -> None:
    body = {"name": " Main ", "type": "custom", "base_url": "http://h:8080/", "api_key": KEY}
    fields = new_fields(body)
    assert (fields.name, fields.type, fields.base_url, fields.api_key) == (
        "Main",
        "custom",
        "http://h:8080/",
        KEY,
    )
    assert KEY not in repr(fields)
    assert new_fields({"name": "o", "type": "openai", "api_key": "k"}).base_url is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "openai", "api_key": "k"}, "name"),
        ({"name": " ", "type": "openai", "api_key": "k"}, "name"),
        ({"name": "x" * 201, "type": "openai", "api_key": "k"}, "name"),
        ({"name": 5, "type": "openai", "api_key": "k"}, "name"),
        ({"name": "n", "type": "anthropic", "api_key": "k"}, "type"),
        ({"name": "n", "api_key": "k"}, "type"),
        ({"name": "n", "type": "custom", "api_key": "k"}, "base_url"),
        ({"name": "n", "type": "custom", "base_url": "ftp://h", "api_key": "k"}, "base_url"),
        ({"name": "n", "type": "custom", "base_url": "localhost", "api_key": "k"}, "base_url"),
        ({"name": "n", "type": "custom", "base_url": "http://h:x/", "api_key": "k"}, "base_url"),
        ({"name": "n", "type": "openai", "base_url": 3, "api_key": "k"}, "base_url"),
        ({"name": "n", "type": "openai"}, "api_key"),
        ({"name": "n", "type": "openai", "api_key": ""}, "api_key"),
        ({"name": "n", "type": "openai", "api_key": 42}, "api_key"),
        ({"name": "n", "type": "openai", "api_key": "k" * 4097}, "api_key"),
    ],
)
def test_new_fields_rejects(body: dict[str, Any], field: str) -> None:
    detail = _expect_422(body, field)
    if isinstance(body.get("api_key"), str) and body["api_key"]:
        assert body["api_key"] not in detail


ROW = CredentialRow(
    id="c1",
    owner_id="u1",
    name="Local",
    type="custom",
    base_url="http://localhost:11434",
    key_hint="****",
    created_at="t",
    updated_at="t",
)


def test_changed_fields_merges_over_the_stored_credential() -> None:
    same = changed_fields({}, ROW)
    assert (same.name, same.type, same.base_url, same.api_key) == (
        "Local",
        "custom",
        "http://localhost:11434",
        None,
    )
    assert changed_fields({"api_key": ""}, ROW).api_key is None
    assert changed_fields({"api_key": None}, ROW).api_key is None
    assert changed_fields({"api_key": KEY, "type": "custom"}, ROW).api_key == KEY
    assert changed_fields({"name": "Renamed"}, ROW).name == "Renamed"


def test_changed_fields_rejects() -> None:
    _expect_422({"type": "openai"}, "type", ROW)
    _expect_422({"base_url": None}, "base_url", ROW)  # custom still needs one
    _expect_422({"name": ""}, "name", ROW)
    _expect_422({"api_key": "   "}, "api_key", ROW)
