"""A skill's files as Heym shapes them (§6.1): safe relative paths, entry point, stdin, stdout.

Pure functions: no process is started here.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import tomllib
from pathlib import PurePosixPath
from typing import Any

MAX_FILES = 200
# A skill travels in events (the agent records its tools; each call carries its skill), which
# hold at most 8 MiB: its files are kept well below that.
MAX_TOTAL_BYTES = 2 * 1024 * 1024

_PEP723 = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


class SkillError(ValueError):
    """The skill cannot run as given (no Python file, an unsafe path, bad encoding)."""


def safe_relative_path(raw: object) -> str:
    """A normalised relative path inside the workspace, or `SkillError`."""
    if not isinstance(raw, str) or not raw.strip():
        raise SkillError("a skill file needs a path")
    text = raw.replace("\\", "/").strip()
    if "\x00" in text:
        raise SkillError(f"skill file path {raw!r} contains NUL")
    path = PurePosixPath(text)
    if path.is_absolute() or any(part == ".." for part in path.parts):
        raise SkillError(f"skill file path {raw!r} leaves the skill's folder")
    parts = [p for p in path.parts if p not in ("", ".")]
    if not parts:
        raise SkillError(f"skill file path {raw!r} names no file")
    return "/".join(parts)


def decode_files(skill: dict[str, Any]) -> list[tuple[str, bytes]]:
    """The skill's files as (relative path, bytes), base64 decoded, within the size budget."""
    raw = skill.get("files") or []
    if not isinstance(raw, list):
        raise SkillError("skill files must be a list")
    if len(raw) > MAX_FILES:
        raise SkillError(f"a skill may have at most {MAX_FILES} files")
    files: list[tuple[str, bytes]] = []
    total = 0
    for item in raw:
        if not isinstance(item, dict):
            raise SkillError("each skill file must be an object with path and content")
        path = safe_relative_path(item.get("path"))
        content = item.get("content") or ""
        if not isinstance(content, str):
            raise SkillError(f"content of {path} must be a string")
        if item.get("encoding") == "base64":
            try:
                data = base64.b64decode(content, validate=False)
            except (binascii.Error, ValueError):
                raise SkillError(f"{path} is not valid base64") from None
        else:
            data = content.encode("utf-8", errors="surrogatepass")
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise SkillError(f"a skill's files may total at most {MAX_TOTAL_BYTES} bytes")
        files.append((path, data))
    return files


def entry_point(paths: list[str]) -> str:
    """`main.py`, else `run.py`, else the first `.py` (Heym matched any name ending in
    `main.py`, so `domain.py` won over `main.py`; here the file name must be exactly it)."""
    python = [p for p in paths if p.endswith(".py")]
    for wanted in ("main.py", "run.py"):
        for path in python:
            if PurePosixPath(path).name == wanted:
                return path
    if not python:
        raise SkillError("No Python file found in skill")
    return python[0]


def stdin_payload(arguments: dict[str, Any]) -> bytes:
    """Exactly `{"input": x}`: a string x is written raw (else JSON); otherwise all as JSON."""
    if set(arguments) == {"input"}:
        value = arguments["input"]
        text = value if isinstance(value, str) else json.dumps(value)
        return text.encode("utf-8", errors="replace")
    return json.dumps(arguments).encode("utf-8")


def parse_output(stdout: bytes, stderr: bytes) -> Any:
    """Trimmed stdout as JSON when it parses, else `{output, stderr}` (§6.1)."""
    text = stdout.decode("utf-8", errors="replace").strip()
    err = stderr.decode("utf-8", errors="replace").strip()
    if text:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return {"output": text, "stderr": err}


def inline_dependencies(source: str) -> list[str]:
    """The `dependencies` of a PEP 723 `# /// script` block (empty when there is none)."""
    blocks = [m for m in _PEP723.finditer(source) if m.group("type") == "script"]
    if len(blocks) != 1:
        return []
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in blocks[0].group("content").splitlines(keepends=True)
    )
    try:
        meta = tomllib.loads(content)
    except tomllib.TOMLDecodeError:
        return []
    deps = meta.get("dependencies")
    if not isinstance(deps, list):
        return []
    return [str(d) for d in deps if isinstance(d, str) and d.strip()][:50]


def tool_name(skill_name: str) -> str:
    """`skill_<name lowercased, spaces→_>` (§4.2 step 6)."""
    return "skill_" + skill_name.lower().replace(" ", "_")
