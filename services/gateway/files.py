"""`GET /api/files/{id}?token=…`: a file a skill wrote (JetStream object store), served
only with its token.

The token is the capability (links in tool results are opened by people and browsers that
carry no API key); a missing, wrong or unknown token is a 404, the same as an unknown id.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.datastructures import State
from litestar.exceptions import NotFoundException

from libs.tools.file_store import FileStore


def _disposition(filename: str) -> str:
    safe = "".join(c if c.isalnum() or c in "._- " else "_" for c in filename)[:200] or "file"
    return f'attachment; filename="{safe}"'


class FileController(Controller):
    path = "/api/files"
    tags = ["files"]

    @get("/{file_id:str}", summary="Download a file a skill generated (needs its token)")
    async def download(
        self, request: Request[Any, Any, State], file_id: str, token: str = ""
    ) -> Response[bytes]:
        stored = await FileStore(request.app.state.ctx.nc).get(file_id, token)
        if stored is None:
            raise NotFoundException(detail="file not found")
        return Response(
            content=stored.content,
            media_type=stored.mime_type,
            headers={
                "Content-Disposition": _disposition(stored.filename),
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "private, no-store",
            },
        )
