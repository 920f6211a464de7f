"""`/api/users`: administrators create users and issue and revoke their API keys.

A key is shown once, in the answer that issues it; only its SHA-256 is stored. A revoked key
stops working at once on every gateway replica: keys are checked against Postgres on every
request and no replica caches them.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar import Controller, Request, delete, get, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException, PermissionDeniedException

from libs import accounts
from libs.accounts import AccountUser
from services.gateway.auth import required_user
from services.gateway.bodies import json_object, refuse_nul
from services.gateway.openapi import KEY_LINKS, NEW_KEY, NEW_USER, USER_LINKS, with_body

MAX_NAME = 200
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,255}")


class NewUser(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    email: str
    name: str = ""
    is_admin: bool = False


class NewKey(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "default"


async def admin_user(request: Request[Any, Any, State]) -> AccountUser:
    user = await required_user(request)
    if not user.is_admin:
        raise PermissionDeniedException(detail="only administrators may manage users")
    return user


def _body(raw: dict[str, Any], kind: type[Any]) -> Any:
    refuse_nul(raw, "the request")
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise HTTPException(status_code=422, detail=f"invalid body: {exc}") from None


def _check_name(name: str) -> str:
    name = name.strip()
    if len(name) > MAX_NAME:
        raise HTTPException(status_code=422, detail=f"name must be at most {MAX_NAME} characters")
    return name


def user_json(user: AccountUser) -> dict[str, Any]:
    return {"id": user.id, "email": user.email, "name": user.name, "is_admin": user.is_admin}


async def _existing(request: Request[Any, Any, State], user_id: str) -> AccountUser:
    found = await accounts.get_user(request.app.state.ctx.pool, user_id)
    if found is None:
        raise NotFoundException(detail=f"user {user_id} not found")
    return found


class UserController(Controller):
    path = "/api/users"
    tags = ["users"]
    dependencies = {"admin": Provide(admin_user)}

    @post(
        "",
        summary="Create a user (administrators)",
        status_code=201,
        operation_class=with_body(NEW_USER, created=USER_LINKS),
    )
    async def create(self, request: Request[Any, Any, State], admin: AccountUser) -> dict[str, Any]:
        body: NewUser = _body(await json_object(request), NewUser)
        email = body.email.strip().lower()
        if not _EMAIL.fullmatch(email):
            raise HTTPException(status_code=422, detail="email must look like name@host")
        try:
            user = await accounts.create_user(
                request.app.state.ctx.pool,
                email=email,
                name=_check_name(body.name),
                is_admin=body.is_admin,
            )
        except accounts.EmailTaken:
            raise HTTPException(status_code=409, detail="a user with this email exists") from None
        return user_json(user)

    @get("", summary="Every user (administrators)")
    async def list_all(
        self, request: Request[Any, Any, State], admin: AccountUser
    ) -> list[dict[str, Any]]:
        return [user_json(u) for u in await accounts.list_users(request.app.state.ctx.pool)]

    @post(
        "/{user_id:str}/api-keys",
        summary="Issue an API key (shown once in this answer, stored hashed)",
        status_code=201,
        operation_class=with_body(NEW_KEY, required=False, created=KEY_LINKS),
    )
    async def issue_key(
        self, request: Request[Any, Any, State], user_id: str, admin: AccountUser
    ) -> dict[str, Any]:
        raw = await json_object(request) if (await request.body()).strip() else {}
        body: NewKey = _body(raw, NewKey)
        user = await _existing(request, user_id)
        row, key = await accounts.issue_api_key(
            request.app.state.ctx.pool, user.id, name=_check_name(body.name) or "default"
        )
        return {**msgspec.to_builtins(row), "api_key": key}

    @get("/{user_id:str}/api-keys", summary="A user's API keys (never the keys themselves)")
    async def keys(
        self, request: Request[Any, Any, State], user_id: str, admin: AccountUser
    ) -> list[dict[str, Any]]:
        user = await _existing(request, user_id)
        rows = await accounts.list_api_keys(request.app.state.ctx.pool, user.id)
        return [msgspec.to_builtins(r) for r in rows]

    @delete(
        "/{user_id:str}/api-keys/{key_id:str}",
        summary="Revoke an API key (at once, on every gateway)",
        status_code=204,
    )
    async def revoke(
        self, request: Request[Any, Any, State], user_id: str, key_id: str, admin: AccountUser
    ) -> None:
        if not await accounts.revoke_api_key(request.app.state.ctx.pool, user_id, key_id):
            raise NotFoundException(detail=f"user {user_id} has no API key {key_id}")
