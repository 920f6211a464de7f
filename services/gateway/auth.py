"""API-key authentication: `X-MCP-Key: <key>` or `Authorization: Bearer <key>`, headers only."""

from __future__ import annotations

from litestar import Request
from litestar.datastructures import State
from litestar.exceptions import NotAuthorizedException

from libs.accounts import AccountUser, user_for_api_key
from libs.accounts.execution_tokens import looks_like_token


def presented_key(request: Request[object, object, State]) -> str | None:
    key = request.headers.get("x-mcp-key")
    if key:
        return key.strip()
    auth = request.headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


async def optional_user(request: Request[object, object, State]) -> AccountUser | None:
    key = presented_key(request)
    if key is None:
        return None
    user = await user_for_api_key(request.app.state.ctx.pool, key)
    if user is None:
        raise NotAuthorizedException(detail="the API key is not valid")
    return user


def presented_execution_token(request: Request[object, object, State]) -> str | None:
    """An execution token sent as `X-Execution-Token`, or as a bearer that is a JWT."""
    token = request.headers.get("x-execution-token")
    if token:
        return token.strip()
    key = presented_key(request)
    return key if key is not None and looks_like_token(key) else None


async def user_unless_token(request: Request[object, object, State]) -> AccountUser | None:
    """The API-key user, if any; a bearer execution token is not an API key (see execute)."""
    if presented_execution_token(request) is not None and not request.headers.get("x-mcp-key"):
        return None
    return await optional_user(request)


async def required_user(request: Request[object, object, State]) -> AccountUser:
    user = await optional_user(request)
    if user is None:
        raise NotAuthorizedException(
            detail="send an API key as 'X-MCP-Key: <key>' or 'Authorization: Bearer <key>'"
        )
    return user
