"""The inspector's page shell: header with navigation and sign-out, scripts and styles from
this origin only, and the Content-Security-Policy that allows exactly that."""

from __future__ import annotations

from html import escape

from litestar import Response

from services.gateway.web.assets import url
from services.gateway.web.document import document, html_response
from services.gateway.web.security import content_security_policy, page_headers

CSP = content_security_policy(styles="'self'", scripts="'self'")
HEADERS = page_headers(CSP, referrer="same-origin")
# htmx without anything that needs eval or inline styles (the CSP allows neither), and never
# running a script found in swapped HTML.
_HTMX_CONFIG = (
    '{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,'
    '"selfRequestsOnly":true,"historyEnabled":false}'
)
NAV = (("history", "/ui/history", "History"), ("traces", "/ui/traces", "Traces"))


def _head() -> str:
    scripts = "".join(
        f'<script defer src="{escape(url(name))}"></script>'
        for name in (
            "vendor/htmx-2.0.11.min.js",
            "vendor/htmx-ext-sse-2.2.4.min.js",
            "inspector.js",
        )
    )
    return (
        f"<meta name=htmx-config content='{_HTMX_CONFIG}'>"
        f'<link rel=icon href="{escape(url("favicon.svg"))}">'
        f'<link rel=stylesheet href="{escape(url("heym.css"))}">{scripts}'
    )


def _header(email: str, csrf: str, active: str) -> str:
    links = "".join(
        f'<a href="{href}"{" class=on" if key == active else ""}>{label}</a>'
        for key, href, label in NAV
    )
    return (
        '<header class=top><a class=brand href="/ui/history">Heym</a>'
        f"<nav>{links}</nav><span class=who>{escape(email)}</span>"
        '<form method=post action="/ui/signout">'
        f'<input type=hidden name=csrf value="{escape(csrf)}">'
        "<button type=submit id=signout>Sign out</button></form></header>"
    )


def page(title: str, body: str, *, email: str, csrf: str, active: str = "") -> str:
    return document(title, body, head=_head(), header=_header(email, csrf, active))


def bare_page(title: str, body: str) -> str:
    """A page for someone not signed in (the sign-in form, its errors)."""
    return document(title, body, head=_head())


def respond(body: str, status: int = 200, headers: dict[str, str] | None = None) -> Response[str]:
    return html_response(body, HEADERS, status, extra=headers)
