"""`/api/workflows/{id}/execution-tokens`: issue, list and revoke workflow-scoped tokens that
run a `jwt` workflow without an API key (`X-Execution-Token` or `Authorization: Bearer`)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException, NotFoundException

from libs.accounts import AccountUser
from libs.accounts import execution_tokens as tokens
from services.gateway.auth import required_user
from services.gateway.bodies import json_body
from services.gateway.workflows import owned

MAX_LIFETIME_S = 10 * 365 * 24 * 3600


class ExecutionTokenController(Controller):
    path = "/api/workflows/{workflow_id:str}/execution-tokens"
    tags = ["workflows"]
    dependencies = {"user": Provide(required_user)}

    @post("", summary="Issue an execution token (shown once)", status_code=201)
    async def issue(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await owned(request, workflow_id, user)
        body = await json_body(request, empty={})
        if not isinstance(body, dict):
            raise ClientException(detail="the request body must be a JSON object")
        name = body.get("name", "")
        if not isinstance(name, str) or len(name) > 200:
            raise ClientException(detail="name must be a string of at most 200 characters")
        expires = body.get("expires_in_seconds")
        if expires is not None and (
            isinstance(expires, bool)
            or not isinstance(expires, int)
            or not 1 <= expires <= MAX_LIFETIME_S
        ):
            raise ClientException(
                detail=f"expires_in_seconds must be an integer from 1 to {MAX_LIFETIME_S}"
            )
        state = request.app.state
        record, token = await tokens.issue(
            state.ctx.pool,
            state.token_key,
            workflow_id=row.id,
            owner_id=user.id,
            name=name,
            expires_in_s=expires,
        )
        return {**record, "token": token}

    @get("", summary="The workflow's execution tokens (without the tokens themselves)")
    async def list_all(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser
    ) -> list[dict[str, Any]]:
        row = await owned(request, workflow_id, user)
        return await tokens.list_tokens(request.app.state.ctx.pool, row.id)

    @delete("/{token_id:str}", summary="Revoke an execution token", status_code=204)
    async def revoke(
        self, request: Request[Any, Any, State], workflow_id: str, token_id: str, user: AccountUser
    ) -> None:
        row = await owned(request, workflow_id, user)
        if not await tokens.revoke(request.app.state.ctx.pool, row.id, token_id):
            raise NotFoundException(detail=f"no active execution token {token_id}")
