"""Who is looking: the session cookie, the CSRF token every form carries, and the checks.

The cookie holds a random session token (`libs/accounts/sessions`: stored hashed, shared by
every gateway replica). It is HttpOnly, SameSite=Strict, limited to `/ui`, expiring with the
session, and Secure when the page is served over HTTPS (the request's scheme, which uvicorn
takes from a trusted proxy's `X-Forwarded-Proto`, or an https `HEYM_PUBLIC_URL`).

Every form carries a CSRF token: an HMAC of the session token under a key derived from
`HEYM_SECRET_KEY` (the sign-in form, before any session, of a random nonce cookie). A POST
without the right token is refused, and so is one whose `Origin` names another host (pages
send their referrer to this origin only, so the browser's `Origin` is there to check).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import msgspec
from litestar import Request, Response
from litestar.datastructures import Cookie, State

from libs.accounts import AccountUser
from libs.accounts.sessions import session_for

COOKIE = "heym_session"
SIGNIN_COOKIE = "heym_signin"
COOKIE_PATH = "/ui"
MAX_FORM_BYTES = 16 * 1024


class Viewer(msgspec.Struct, frozen=True, kw_only=True):
    user: AccountUser
    token: str
    csrf: str


class SignInRequired(Exception):
    """No valid session: pages redirect to the sign-in form, streams answer 401."""


class FormRefused(Exception):
    """A form post without the right CSRF token, from another origin, or too large."""

    def __init__(self, detail: str, status: int = 403) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


def form_key(secret_key: str) -> bytes:
    """The key of CSRF tokens, derived from the instance secret (never used raw)."""
    return hmac.new(secret_key.encode(), b"heym web forms v1", hashlib.sha256).digest()


def csrf_token(key: bytes, purpose: str, value: str) -> str:
    return hmac.new(key, f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()


def _key(request: Request[Any, Any, State]) -> bytes:
    key: bytes = request.app.state.form_key
    return key


async def current_viewer(request: Request[Any, Any, State]) -> Viewer | None:
    token = request.cookies.get(COOKIE)
    session = await session_for(request.app.state.ctx.pool, token)
    if session is None or token is None:
        return None
    return Viewer(user=session.user, token=token, csrf=csrf_token(_key(request), "session", token))


async def viewer(request: Request[Any, Any, State]) -> Viewer:
    """The signed-in viewer (a dependency of every inspector page)."""
    found = await current_viewer(request)
    if found is None:
        raise SignInRequired
    return found


def secure(request: Request[Any, Any, State]) -> bool:
    public = request.app.state.settings.public_url or ""
    return request.url.scheme == "https" or public.startswith("https://")


def cookie(request: Request[Any, Any, State], name: str, value: str, max_age: int) -> Cookie:
    return Cookie(
        key=name,
        value=value,
        path=COOKIE_PATH,
        max_age=max_age,
        httponly=True,
        samesite="strict",
        secure=secure(request),
    )


def cleared(request: Request[Any, Any, State], name: str) -> Cookie:
    return cookie(request, name, "", 0)


async def form_fields(request: Request[Any, Any, State]) -> dict[str, str]:
    """A urlencoded form's fields (first value of each), after the same-origin check."""
    origin = request.headers.get("origin")
    # "null" (an opaque origin) says nothing either way: the CSRF token decides. Behind a
    # proxy that changes Host, the public URL's host is this site too.
    public = urlsplit(request.app.state.settings.public_url or "").netloc
    here = {request.headers.get("host"), public or None}
    if origin not in (None, "null") and urlsplit(origin).netloc not in here:
        raise FormRefused("This form was sent from another site.")
    raw = await request.body()
    if len(raw) > MAX_FORM_BYTES:
        raise FormRefused("The form is too large.", 413)
    parsed = parse_qs(raw.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {k: v[0] for k, v in parsed.items() if v}


def check_csrf(request: Request[Any, Any, State], fields: dict[str, str], expected: str) -> None:
    sent = fields.get("csrf", "")
    if not sent or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise FormRefused("This form has expired or was not sent from this page. Reload it.")


def signin_token(request: Request[Any, Any, State], nonce: str) -> str:
    return csrf_token(_key(request), "signin", nonce)


def safe_next(value: str | None) -> str:
    """Where to go after signing in: an inspector path only (no open redirect)."""
    if (
        value
        and value.startswith("/ui/")
        and "//" not in value
        and "\\" not in value
        and len(value) < 512
        and not value.startswith("/ui/static/")
    ):
        return value
    return "/ui/history"


def signin_redirect(request: Request[Any, Any, State], _: Exception) -> Response[Any]:
    if request.method != "GET" or request.url.path.endswith("/live"):
        return Response({"detail": "sign in first"}, status_code=401)
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    target = "/ui/signin?" + urlencode({"next": safe_next(here)})
    return Response(b"", status_code=303, headers={"Location": target})
