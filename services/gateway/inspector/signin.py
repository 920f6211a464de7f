"""`/ui/signin` and `/ui/signout`: a session opened with an API key, closed by the viewer."""

from __future__ import annotations

import secrets
from html import escape
from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import State

from libs.accounts.sessions import close_session, open_session
from services.gateway.inspector import layout
from services.gateway.inspector.viewer import (
    COOKIE,
    SIGNIN_COOKIE,
    FormRefused,
    check_csrf,
    cleared,
    cookie,
    current_viewer,
    form_fields,
    safe_next,
    signin_token,
)

_NONCE_S = 3600


def _form(request: Request[Any, Any, State], nonce: str, next_path: str, problem: str) -> str:
    note = f"<p class=problem id=problem>{escape(problem)}</p>" if problem else ""
    body = (
        "<div class=narrow><h1>Sign in to Heym</h1>"
        "<p class=meta>Use one of your API keys. The key is not kept: it opens a session "
        "on this browser until you sign out.</p>"
        f"{note}<form class='card signin' method=post action='/ui/signin'>"
        f'<input type=hidden name=csrf value="{escape(signin_token(request, nonce))}">'
        f'<input type=hidden name=next value="{escape(next_path)}">'
        "<label for=api_key>API key</label>"
        "<input type=password id=api_key name=api_key autocomplete=current-password "
        "required maxlength=256 spellcheck=false>"
        "<button class=primary type=submit id=signin>Sign in</button></form></div>"
    )
    return layout.bare_page("Sign in · Heym", body)


def _redirect(location: str, cookies: list[Any] | None = None) -> Response[bytes]:
    return Response(b"", status_code=303, headers={"Location": location}, cookies=cookies or [])


class SignInController(Controller):
    path = "/ui"
    include_in_schema = False

    @get("/", summary="The inspector's start page")
    async def start(self) -> Response[bytes]:
        return _redirect("/ui/history")

    @get("/signin", summary="The sign-in form")
    async def form(self, request: Request[Any, Any, State], next: str = "") -> Response[Any]:
        if await current_viewer(request) is not None:
            return _redirect(safe_next(next))
        nonce = request.cookies.get(SIGNIN_COOKIE) or ""
        if len(nonce) != 43:
            nonce = secrets.token_urlsafe(32)
        response = layout.respond(_form(request, nonce, safe_next(next), ""))
        response.cookies.append(cookie(request, SIGNIN_COOKIE, nonce, _NONCE_S))
        return response

    @post("/signin", summary="Sign in with an API key", status_code=303)
    async def sign_in(self, request: Request[Any, Any, State]) -> Response[Any]:
        fields = await form_fields(request)
        nonce = request.cookies.get(SIGNIN_COOKIE) or ""
        if not nonce:
            raise FormRefused("The sign-in form has expired. Reload it.")
        check_csrf(request, fields, signin_token(request, nonce))
        state = request.app.state
        key = fields.get("api_key", "").strip()
        ttl_s = state.settings.session_ttl_h * 3600
        opened = await open_session(state.ctx.pool, key, ttl_s=ttl_s)
        next_path = safe_next(fields.get("next"))
        if opened is None:
            page = _form(request, nonce, next_path, "That API key is not valid.")
            return layout.respond(page, 401)
        token, _ = opened
        max_age = int(state.settings.session_ttl_h * 3600)
        return _redirect(
            next_path,
            [cookie(request, COOKIE, token, max_age), cleared(request, SIGNIN_COOKIE)],
        )

    @post("/signout", summary="Sign out", status_code=303)
    async def sign_out(self, request: Request[Any, Any, State]) -> Response[Any]:
        fields = await form_fields(request)
        found = await current_viewer(request)
        if found is None:
            return _redirect("/ui/signin", [cleared(request, COOKIE)])
        check_csrf(request, fields, found.csrf)
        await close_session(request.app.state.ctx.pool, found.token)
        return _redirect("/ui/signin", [cleared(request, COOKIE)])


def refused_page(request: Request[Any, Any, State], exc: Exception) -> Response[Any]:
    """A refused form (CSRF, origin, size) as a page, never the action."""
    detail = exc.detail if isinstance(exc, FormRefused) else "The form was refused."
    status = exc.status if isinstance(exc, FormRefused) else 403
    body = (
        f"<div class=narrow><h1 id=refused>Not done</h1><p class=problem>{escape(detail)}</p>"
        '<p><a href="/ui/history">Back to the history</a></p></div>'
    )
    return layout.respond(layout.bare_page("Not done · Heym", body), status)
