"""`/api/global-variables`: a user's global variables (`$global` in expressions). `variable`
nodes with `isGlobal` set them too, when their run ends."""

from __future__ import annotations

import re
import uuid
from typing import Any

import asyncpg
from litestar import Controller, Request, delete, get, post, put
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException, HTTPException, NotFoundException

from libs.accounts import AccountUser
from services.gateway.auth import required_user
from services.gateway.bodies import json_object

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_COLUMNS = "id, name, value, created_at, updated_at"
MAX_VALUE_BYTES = 256 * 1024


def _json(r: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": str(r["id"]),
        "name": r["name"],
        "value": r["value"],
        "created_at": r["created_at"].isoformat(),
        "updated_at": r["updated_at"].isoformat(),
    }


def _fields(body: dict[str, Any], *, partial: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "name" in body or not partial:
        name = body.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ClientException(
                detail="name must be an identifier (letters, digits, _; at most 128 characters)"
            )
        out["name"] = name
    if "value" in body or not partial:
        if "value" not in body:
            raise ClientException(detail="send a value (any JSON value)")
        if len(repr(body["value"])) > MAX_VALUE_BYTES:
            raise ClientException(detail=f"value is larger than {MAX_VALUE_BYTES} bytes")
        out["value"] = body["value"]
    return out


def _taken(name: str) -> HTTPException:
    return HTTPException(status_code=409, detail=f"a global variable named {name!r} exists")


def _id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise NotFoundException(detail=f"global variable {value} not found") from None


class GlobalVariableController(Controller):
    path = "/api/global-variables"
    tags = ["global variables"]
    dependencies = {"user": Provide(required_user)}

    @get("", summary="Your global variables")
    async def list_all(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> list[dict[str, Any]]:
        rows = await request.app.state.ctx.pool.fetch(
            f"SELECT {_COLUMNS} FROM global_variables WHERE owner_id = $1 ORDER BY name",
            uuid.UUID(user.id),
        )
        return [_json(r) for r in rows]

    @post("", summary="Create a global variable", status_code=201)
    async def create(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        fields = _fields(await json_object(request), partial=False)
        try:
            r = await request.app.state.ctx.pool.fetchrow(
                f"""INSERT INTO global_variables (id, owner_id, name, value)
                    VALUES ($1, $2, $3, $4) RETURNING {_COLUMNS}""",
                uuid.uuid4(),
                uuid.UUID(user.id),
                fields["name"],
                fields["value"],
            )
        except asyncpg.UniqueViolationError:
            raise _taken(fields["name"]) from None
        assert r is not None
        return _json(r)

    @get("/{variable_id:str}", summary="One global variable")
    async def read(
        self, request: Request[Any, Any, State], variable_id: str, user: AccountUser
    ) -> dict[str, Any]:
        r = await request.app.state.ctx.pool.fetchrow(
            f"SELECT {_COLUMNS} FROM global_variables WHERE id = $1 AND owner_id = $2",
            _id(variable_id),
            uuid.UUID(user.id),
        )
        if r is None:
            raise NotFoundException(detail=f"global variable {variable_id} not found")
        return _json(r)

    @put("/{variable_id:str}", summary="Change a global variable's name or value")
    async def update(
        self, request: Request[Any, Any, State], variable_id: str, user: AccountUser
    ) -> dict[str, Any]:
        fields = _fields(await json_object(request), partial=True)
        pool = request.app.state.ctx.pool
        try:
            r = await pool.fetchrow(
                f"""UPDATE global_variables SET
                        name = CASE WHEN $3 THEN $4 ELSE name END,
                        value = CASE WHEN $5 THEN $6::jsonb ELSE value END,
                        updated_at = now()
                    WHERE id = $1 AND owner_id = $2 RETURNING {_COLUMNS}""",
                _id(variable_id),
                uuid.UUID(user.id),
                "name" in fields,
                fields.get("name", ""),
                "value" in fields,
                fields.get("value"),
            )
        except asyncpg.UniqueViolationError:
            raise _taken(str(fields.get("name"))) from None
        if r is None:
            raise NotFoundException(detail=f"global variable {variable_id} not found")
        return _json(r)

    @delete("/{variable_id:str}", summary="Delete a global variable", status_code=204)
    async def remove(
        self, request: Request[Any, Any, State], variable_id: str, user: AccountUser
    ) -> None:
        done = await request.app.state.ctx.pool.execute(
            "DELETE FROM global_variables WHERE id = $1 AND owner_id = $2",
            _id(variable_id),
            uuid.UUID(user.id),
        )
        if not str(done).endswith(" 1"):
            raise NotFoundException(detail=f"global variable {variable_id} not found")
