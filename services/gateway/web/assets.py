"""The pages' static files (`/ui/static/...`): a fixed list served from the package itself.

Only the files listed here are served (no path from the request ever reaches the file
system). Their URLs carry a content hash, so browsers keep them for a year and a new release
is fetched at once.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources

import msgspec
from litestar import Controller, Response, get
from litestar.exceptions import NotFoundException

PREFIX = "/ui/static/"
_TYPES = {
    "heym.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
    "inspector.js": "text/javascript; charset=utf-8",
    "vendor/htmx-2.0.11.min.js": "text/javascript; charset=utf-8",
    "vendor/htmx-ext-sse-2.2.4.min.js": "text/javascript; charset=utf-8",
}


class Asset(msgspec.Struct, frozen=True, kw_only=True):
    body: bytes
    media_type: str
    etag: str


@functools.cache
def asset(name: str) -> Asset | None:
    media_type = _TYPES.get(name)
    if media_type is None:
        return None
    path = resources.files("services.gateway.web").joinpath("static", *name.split("/"))
    body = path.read_bytes()
    return Asset(body=body, media_type=media_type, etag=hashlib.sha256(body).hexdigest()[:16])


def url(name: str) -> str:
    found = asset(name)
    if found is None:
        raise KeyError(name)
    return f"{PREFIX}{name}?v={found.etag}"


class StaticController(Controller):
    path = "/ui/static"
    include_in_schema = False

    @get("/{name:path}", summary="The pages' static files")
    async def file(self, name: str) -> Response[bytes]:
        found = asset(name.lstrip("/"))
        if found is None:
            raise NotFoundException(detail="no such file")
        return Response(
            found.body,
            media_type=found.media_type,
            headers={
                "Cache-Control": "public, max-age=31536000, immutable",
                "ETag": f'"{found.etag}"',
                "X-Content-Type-Options": "nosniff",
            },
        )
