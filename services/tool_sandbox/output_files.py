"""Files a skill wrote to `_OUTPUT_DIR`: stored, listed as `_generated_files`, named by URL.

Only regular files directly in the folder whose names do not start with `_` are taken (at
most 20, 10 MB each); a symlink is never followed (it could point at any file the sandbox
can read). Strings in the result that name a generated file (its name, or a path ending in
it) are rewritten to the file's download URL.
"""

from __future__ import annotations

import mimetypes
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from libs.tools.file_store import MAX_FILE_BYTES, MAX_FILES_PER_CALL, GeneratedFile
from services.tool_sandbox.workspace import OUTPUT_DIR

Store = Callable[[str, str, bytes], Awaitable[GeneratedFile]]


def collect(ws: Path) -> list[tuple[str, bytes]]:
    folder = ws / OUTPUT_DIR
    found: list[tuple[str, bytes]] = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    for name in names:
        if name.startswith("_") or len(found) >= MAX_FILES_PER_CALL:
            continue
        path = folder / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                continue
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) <= MAX_FILE_BYTES:
            found.append((name, data))
    return found


def _rewrite(value: Any, urls: dict[str, str]) -> Any:
    if isinstance(value, str):
        text = value.strip()
        base = text.replace("\\", "/").rsplit("/", 1)[-1]
        if base in urls and (text == base or "/" in text):
            return urls[base]
        return value
    if isinstance(value, dict):
        return {k: _rewrite(v, urls) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, urls) for v in value]
    return value


async def publish(ws: Path, result: Any, store: Store) -> tuple[Any, list[dict[str, Any]]]:
    files = collect(ws)
    if not files:
        return result, []
    generated: list[dict[str, Any]] = []
    for name, data in files:
        mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
        stored = await store(name, mime, data)
        generated.append(
            {
                "id": stored.id,
                "filename": stored.filename,
                "mime_type": stored.mime_type,
                "size_bytes": stored.size_bytes,
                "download_url": stored.download_url,
            }
        )
    urls = {g["filename"]: g["download_url"] for g in generated}
    rewritten = _rewrite(result, urls)
    body = dict(rewritten) if isinstance(rewritten, dict) else {"result": rewritten}
    body["_generated_files"] = generated
    return body, generated
