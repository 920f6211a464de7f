"""`/api/credentials`: model API keys, stored encrypted and never returned after saving."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import msgspec
from litestar import Controller, Request, delete, get, post, put
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException

from libs.accounts import AccountUser
from libs.secrets import CREDENTIAL_TYPES, SecretBox
from services.gateway import credential_store as store
from services.gateway.auth import required_user
from services.gateway.bodies import json_object, refuse_nul
from services.gateway.openapi import CREDENTIAL, CREDENTIAL_LINKS, with_body

MAX_NAME = 200
MAX_API_KEY = 4096
MAX_BASE_URL = 2048


class CredentialFields(msgspec.Struct, frozen=True, kw_only=True):
    """Validated values to store; `api_key` None on update means "keep the stored key"."""

    name: str
    type: str
    base_url: str | None
    api_key: str | None

    def __repr__(self) -> str:
        return f"CredentialFields(name={self.name!r}, type={self.type!r}, api_key=<hidden>)"


def credential_json(row: store.CredentialRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "type": row.type,
        "base_url": row.base_url,
        "key_hint": row.key_hint,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def _problem(field: str, message: str) -> dict[str, str]:
    return {"field": field, "message": message}


def _check_name(value: Any, problems: list[dict[str, str]]) -> str:
    if not isinstance(value, str) or not value.strip() or len(value.strip()) > MAX_NAME:
        problems.append(_problem("name", f"name must be a non-empty string (max {MAX_NAME})"))
        return ""
    return value.strip()


def _check_base_url(value: Any, problems: list[dict[str, str]]) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    message = "base_url must be an http:// or https:// URL"
    if not isinstance(value, str) or len(value) > MAX_BASE_URL:
        problems.append(_problem("base_url", f"{message} (max {MAX_BASE_URL} characters)"))
        return None
    url = value.strip()
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        valid = False
    if not valid or any(c.isspace() for c in url):
        problems.append(_problem("base_url", message))
        return None
    return url


def _check_api_key(value: Any, problems: list[dict[str, str]]) -> str:
    # Messages here must never quote the value: it is the secret itself.
    if not isinstance(value, str) or not value.strip():
        problems.append(_problem("api_key", "api_key must be a non-empty string"))
        return ""
    key = value.strip()
    if len(key) > MAX_API_KEY:
        problems.append(_problem("api_key", f"api_key must be at most {MAX_API_KEY} characters"))
        return ""
    return key


def _finish(fields: CredentialFields, problems: list[dict[str, str]]) -> CredentialFields:
    if (
        fields.type == "custom"
        and fields.base_url is None
        and not any(p["field"] == "base_url" for p in problems)
    ):
        problems.append(_problem("base_url", "a custom credential needs base_url"))
    if problems:
        summary = "; ".join(p["message"] for p in problems)
        raise HTTPException(
            status_code=422, detail=f"invalid credential: {summary}", extra=problems
        )
    return fields


def new_fields(body: dict[str, Any]) -> CredentialFields:
    """Validate a POST body; raises a 422 listing every problem."""
    refuse_nul(body, "a credential")
    problems: list[dict[str, str]] = []
    kind = body.get("type")
    if kind not in CREDENTIAL_TYPES:
        problems.append(_problem("type", f"type must be one of {', '.join(CREDENTIAL_TYPES)}"))
    fields = CredentialFields(
        name=_check_name(body.get("name"), problems),
        type=kind if isinstance(kind, str) else "",
        base_url=_check_base_url(body.get("base_url"), problems),
        api_key=_check_api_key(body.get("api_key"), problems),
    )
    return _finish(fields, problems)


def changed_fields(body: dict[str, Any], current: store.CredentialRow) -> CredentialFields:
    """Merge a PUT body over the stored credential; a missing, null or empty api_key keeps it.

    Changing where the key is sent (base_url) needs the key again: otherwise anyone who can
    edit the credential could send the stored key to a host of their choosing.
    """
    refuse_nul(body, "a credential")
    problems: list[dict[str, str]] = []
    if "type" in body and body["type"] != current.type:
        problems.append(_problem("type", "type cannot be changed; create a new credential"))
    api_key = body.get("api_key")
    fields = CredentialFields(
        name=_check_name(body["name"], problems) if "name" in body else current.name,
        type=current.type,
        base_url=(
            _check_base_url(body["base_url"], problems) if "base_url" in body else current.base_url
        ),
        # A form that cannot show the stored key sends it back blank: that means "unchanged".
        api_key=None if api_key is None or api_key == "" else _check_api_key(api_key, problems),
    )
    if fields.base_url != current.base_url and fields.api_key is None:
        problems.append(
            _problem("api_key", "changing base_url needs the api_key again (it is sent there)")
        )
    return _finish(fields, problems)


def _box(request: Request[Any, Any, State]) -> SecretBox:
    box: SecretBox = request.app.state.secrets
    return box


def _not_found(credential_id: str) -> NotFoundException:
    return NotFoundException(detail=f"credential {credential_id} not found")


def _taken(exc: store.CredentialNameTaken) -> HTTPException:
    return HTTPException(status_code=409, detail=str(exc))


class CredentialController(Controller):
    path = "/api/credentials"
    tags = ["credentials"]
    dependencies = {"user": Provide(required_user)}

    @post(
        "",
        summary="Store a model credential (the key is encrypted)",
        status_code=201,
        operation_class=with_body(CREDENTIAL, created=CREDENTIAL_LINKS),
    )
    async def create(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        fields = new_fields(await json_object(request))
        assert fields.api_key is not None  # new_fields rejects a missing key
        try:
            row = await store.insert_credential(
                request.app.state.ctx.pool,
                _box(request),
                user.id,
                name=fields.name,
                type=fields.type,
                base_url=fields.base_url,
                api_key=fields.api_key,
            )
        except store.CredentialNameTaken as exc:
            raise _taken(exc) from None
        return credential_json(row)

    @get("", summary="Your credentials, by name (keys are never returned)")
    async def list_all(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> list[dict[str, Any]]:
        rows = await store.list_credentials(request.app.state.ctx.pool, user.id)
        return [credential_json(r) for r in rows]

    @get("/{credential_id:str}", summary="One credential (without its key)")
    async def read(
        self, request: Request[Any, Any, State], credential_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await store.get_credential(request.app.state.ctx.pool, user.id, credential_id)
        if row is None:
            raise _not_found(credential_id)
        return credential_json(row)

    @put(
        "/{credential_id:str}",
        summary="Rename, change the base URL (with the key), or replace the key",
        operation_class=with_body(CREDENTIAL),
    )
    async def update(
        self, request: Request[Any, Any, State], credential_id: str, user: AccountUser
    ) -> dict[str, Any]:
        pool = request.app.state.ctx.pool
        current = await store.get_credential(pool, user.id, credential_id)
        if current is None:
            raise _not_found(credential_id)
        fields = changed_fields(await json_object(request), current)
        try:
            row = await store.update_credential(
                pool,
                _box(request),
                user.id,
                credential_id,
                name=fields.name,
                base_url=fields.base_url,
                api_key=fields.api_key,
            )
        except store.CredentialNameTaken as exc:
            raise _taken(exc) from None
        if row is None:
            raise _not_found(credential_id)
        return credential_json(row)

    @delete("/{credential_id:str}", summary="Delete a credential", status_code=204)
    async def remove(
        self, request: Request[Any, Any, State], credential_id: str, user: AccountUser
    ) -> None:
        if not await store.delete_credential(request.app.state.ctx.pool, user.id, credential_id):
            raise _not_found(credential_id)
