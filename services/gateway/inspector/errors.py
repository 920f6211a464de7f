"""The inspector's failures as pages: sign-in redirects, refused forms, 404 and 400."""

from __future__ import annotations

from html import escape
from typing import Any

from litestar import Request, Response
from litestar.datastructures import State
from litestar.exceptions import ClientException, NotFoundException
from litestar.types import ExceptionHandlersMap

from services.gateway.inspector import layout
from services.gateway.inspector.signin import refused_page
from services.gateway.inspector.viewer import FormRefused, SignInRequired, signin_redirect


def _problem(title: str, text: str, status: int) -> Response[str]:
    body = (
        f"<div class=narrow><h1 id=problem-title>{escape(title)}</h1>"
        f"<p class=problem>{escape(text)}</p>"
        '<p><a href="/ui/history">Back to the history</a></p></div>'
    )
    return layout.respond(layout.bare_page(f"{title} · Heym", body), status)


def not_found(_: Request[Any, Any, State], exc: Exception) -> Response[str]:
    # Another user's run, workflow or trace is "not found", exactly like an unknown id.
    return _problem("Not found", "There is nothing here, or it is not yours.", 404)


def bad_request(_: Request[Any, Any, State], exc: Exception) -> Response[str]:
    detail = exc.detail if isinstance(exc, ClientException) else "bad request"
    return _problem("Not understood", str(detail), 400)


HANDLERS: ExceptionHandlersMap = {
    SignInRequired: signin_redirect,
    FormRefused: refused_page,
    NotFoundException: not_found,
    ClientException: bad_request,
}
