"""A skill from an uploaded `.md` (content only) or `.zip` (`SKILL.md` or a `.md` for the
content, the other files as the skill's files), checked as hostile input.

Refused: entries whose path leaves the skill's folder (`../`, absolute paths), symlinks,
more than `MAX_FILES` files or `MAX_TOTAL_BYTES` unpacked (read with a hard cap, so a zip bomb
is stopped at the cap whatever its headers claim), and archives that are not zip files.
"""

from __future__ import annotations

import base64
import io
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from libs.tools.skill_files import MAX_FILES, MAX_TOTAL_BYTES, SkillError, safe_relative_path

MAX_NAME = 200


class SkillUploadError(ValueError):
    """The upload is refused; the message says why (it is shown to the uploader)."""


@dataclass
class SkillDraft:
    name: str
    content: str
    files: list[dict[str, Any]] = field(default_factory=list)


def _front_matter_name(text: str) -> str | None:
    if not text.startswith("---"):
        return None
    for line in text.splitlines()[1:40]:
        if line.strip() == "---":
            return None
        key, _, value = line.partition(":")
        if key.strip().lower() == "name" and value.strip():
            return value.strip().strip("'\"")[:MAX_NAME]
    return None


def _stem(filename: str) -> str:
    base = PurePosixPath(filename.replace("\\", "/")).name
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return (stem.strip() or "skill")[:MAX_NAME]


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def from_markdown(filename: str, data: bytes) -> SkillDraft:
    text = _text(data)
    if text is None:
        raise SkillUploadError("the .md file is not UTF-8 text")
    return SkillDraft(name=_front_matter_name(text) or _stem(filename), content=text)


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo, room: int) -> bytes:
    with archive.open(info) as f:
        data = f.read(room + 1)
    if len(data) > room:
        raise SkillUploadError(f"the skill's files unpack to more than {MAX_TOTAL_BYTES} bytes")
    return data


def from_zip(filename: str, data: bytes) -> SkillDraft:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise SkillUploadError(f"not a valid zip file: {exc}") from None
    entries: list[tuple[str, bytes]] = []
    total = 0
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > MAX_FILES:
            raise SkillUploadError(f"a skill may have at most {MAX_FILES} files")
        for info in infos:
            if _is_symlink(info):
                raise SkillUploadError(f"{info.filename!r} is a symlink; skills may not hold links")
            try:
                path = safe_relative_path(info.filename)
            except SkillError as exc:
                raise SkillUploadError(str(exc)) from None
            try:
                body = _read_capped(archive, info, MAX_TOTAL_BYTES - total)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError) as exc:
                raise SkillUploadError(f"cannot unpack {info.filename!r}: {exc}") from None
            total += len(body)
            entries.append((path, body))
    if not entries:
        raise SkillUploadError("the zip file holds no files")
    # One folder around everything (zipping a folder): its contents are the skill.
    tops = {p.split("/", 1)[0] for p, _ in entries}
    if len(tops) == 1 and all("/" in p for p, _ in entries):
        entries = [(p.split("/", 1)[1], b) for p, b in entries]
    content_path = next(
        (p for p, _ in entries if PurePosixPath(p).name.upper() == "SKILL.MD"),
        next((p for p, _ in entries if p.lower().endswith(".md")), None),
    )
    content, name = "", None
    files: list[dict[str, Any]] = []
    for path, body in entries:
        text = _text(body)
        if path == content_path:
            if text is None:
                raise SkillUploadError(f"{path} is not UTF-8 text")
            content = text
            name = _front_matter_name(text)
            continue
        if text is not None:
            files.append({"path": path, "content": text, "encoding": "text"})
        else:
            encoded = base64.b64encode(body).decode("ascii")
            files.append({"path": path, "content": encoded, "encoding": "base64"})
    return SkillDraft(name=name or _stem(filename), content=content, files=files)


def from_upload(filename: str, data: bytes) -> SkillDraft:
    lower = filename.lower()
    if lower.endswith(".zip") or data[:4] == b"PK\x03\x04":
        return from_zip(filename, data)
    if lower.endswith((".md", ".markdown")):
        return from_markdown(filename, data)
    raise SkillUploadError("upload a .md file (the skill's content) or a .zip file")
