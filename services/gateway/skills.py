"""`/api/skills`: the skills library (upload a .md or .zip, or send Heym's skill JSON)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post
from litestar.datastructures import State, UploadFile
from litestar.di import Provide
from litestar.exceptions import ClientException, NotFoundException

from libs.accounts import AccountUser
from libs.tools import skill_store
from libs.tools.skill_files import SkillError, decode_files
from libs.tools.skill_upload import MAX_NAME, SkillDraft, SkillUploadError, from_upload
from services.gateway.auth import required_user
from services.gateway.bodies import json_object


def skill_json(row: skill_store.SkillRow, *, with_files: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": row.id,
        "name": row.name,
        "content": row.content,
        "timeoutSeconds": row.timeout_seconds,
        "file_paths": [f.get("path") for f in row.files],
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if with_files:
        body["files"] = row.files
    return body


def _timeout(raw: Any) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ClientException(detail="timeoutSeconds must be a number") from None
    if not 0 < value <= 3600:
        raise ClientException(detail="timeoutSeconds must be between 0 and 3600")
    return value


def _from_json(body: dict[str, Any]) -> tuple[SkillDraft, float | None]:
    name = body.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise ClientException(detail=f"name must be a non-empty string (max {MAX_NAME})")
    content = body.get("content") or ""
    if not isinstance(content, str):
        raise ClientException(detail="content must be a string")
    try:
        decode_files({"files": body.get("files") or []})  # every path and encoding checked
    except SkillError as exc:
        raise ClientException(detail=str(exc)) from None
    files = [
        {k: f[k] for k in ("path", "content", "encoding", "mimeType") if k in f}
        for f in body.get("files") or []
    ]
    return SkillDraft(name=name.strip(), content=content, files=files), _timeout(
        body.get("timeoutSeconds")
    )


async def _draft(request: Request[Any, Any, State]) -> tuple[SkillDraft, float | None]:
    ctype = request.headers.get("content-type", "").lower()
    try:
        if ctype.startswith("multipart/form-data"):
            form = await request.form()
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                raise ClientException(detail="send the skill as the form field 'file'")
            draft = from_upload(upload.filename or "skill", await upload.read())
            name = form.get("name")
            if isinstance(name, str) and name.strip():
                draft.name = name.strip()[:MAX_NAME]
            return draft, _timeout(form.get("timeoutSeconds"))
        if ctype.startswith("application/json"):
            return _from_json(await json_object(request))
        filename = request.query_params.get("filename") or (
            "skill.zip" if "zip" in ctype else "skill.md"
        )
        return from_upload(filename, await request.body()), _timeout(
            request.query_params.get("timeoutSeconds")
        )
    except SkillUploadError as exc:
        raise ClientException(detail=f"skill refused: {exc}") from None


class SkillController(Controller):
    path = "/api/skills"
    tags = ["skills"]
    dependencies = {"user": Provide(required_user)}

    @post(
        "",
        summary="Add a skill: a .md or .zip upload (multipart 'file' or a raw body), or JSON",
        status_code=201,
    )
    async def create(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        draft, timeout = await _draft(request)
        row = await skill_store.insert_skill(
            request.app.state.ctx.pool,
            user.id,
            name=draft.name,
            content=draft.content,
            files=draft.files,
            timeout_seconds=timeout,
        )
        return skill_json(row, with_files=False)

    @get("", summary="Your skills (without file contents)")
    async def list_all(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> list[dict[str, Any]]:
        rows = await skill_store.list_skills(request.app.state.ctx.pool, user.id)
        return [skill_json(r, with_files=False) for r in rows]

    @get("/{skill_id:str}", summary="One skill with its files")
    async def read(
        self, request: Request[Any, Any, State], skill_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await skill_store.get_skill(request.app.state.ctx.pool, user.id, skill_id)
        if row is None:
            raise NotFoundException(detail=f"skill {skill_id} not found")
        return skill_json(row, with_files=True)

    @delete("/{skill_id:str}", summary="Delete a skill", status_code=204)
    async def remove(
        self, request: Request[Any, Any, State], skill_id: str, user: AccountUser
    ) -> None:
        if not await skill_store.delete_skill(request.app.state.ctx.pool, user.id, skill_id):
            raise NotFoundException(detail=f"skill {skill_id} not found")
