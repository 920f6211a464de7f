"""The HTML document every page is served in, and the response that carries it."""

from __future__ import annotations

from html import escape

from litestar import Response
from litestar.enums import MediaType


def document(title: str, body: str, *, head: str = "", header: str = "") -> str:
    """A complete page; `head`, `header` (before `<main>`) and `body` (inside it) are HTML
    the caller has escaped."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title>{head}</head>"
        f"<body>{header}<main>{body}</main></body></html>"
    )


def html_response(
    body: str, headers: dict[str, str], status: int = 200, *, extra: dict[str, str] | None = None
) -> Response[str]:
    return Response(
        body,
        status_code=status,
        media_type=MediaType.HTML,
        headers={**headers, **(extra or {})},
    )
