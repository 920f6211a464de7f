"""Skills with inline dependencies (PEP 723) run with `uv run`; when uv cannot resolve them
the sandbox's interpreter runs the skill, and the result's metadata says which ran and why."""

from __future__ import annotations

import base64
import hashlib
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.tool_sandbox.skills import SkillRunner
from tests.integration.tool_sandbox.conftest import no_files, skill

pytestmark = pytest.mark.integration


def wheel(directory: Path) -> Path:
    """A tiny pure-Python wheel, built by hand (no network, no build backend)."""
    name, version = "heymdep", "1.0"
    path = directory / f"{name}-{version}-py3-none-any.whl"
    files = {
        f"{name}/__init__.py": b"VALUE = 'from the wheel'\n",
        f"{name}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        ).encode(),
        f"{name}-{version}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: heym-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record_lines = []
    for arc, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record_lines.append(f"{arc},sha256={digest},{len(data)}")
    record_lines.append(f"{name}-{version}.dist-info/RECORD,,")
    files[f"{name}-{version}.dist-info/RECORD"] = ("\n".join(record_lines) + "\n").encode()
    with zipfile.ZipFile(path, "w") as z:
        for arc, data in files.items():
            z.writestr(arc, data)
    path.chmod(0o644)
    return path


def script(dependency: str) -> str:
    return (
        "# /// script\n"
        f"# dependencies = [{dependency!r}]\n"
        "# ///\n"
        "import json\n"
        "try:\n"
        "    import heymdep\n"
        "    print(json.dumps({'value': heymdep.VALUE}))\n"
        "except ImportError:\n"
        "    print(json.dumps({'value': None}))\n"
    )


@pytest.fixture
def wheels() -> Iterator[Path]:
    # Not under /tmp: bubblewrap gives the sandbox a private /tmp, and uv (inside) reads the
    # wheel's path again.
    root = Path("/var/tmp") if Path("/var/tmp").is_dir() else None
    path = Path(tempfile.mkdtemp(prefix="heym-wheels-", dir=root))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def test_a_skill_with_inline_dependencies_runs_with_uv(
    skills: SkillRunner, wheels: Path
) -> None:
    path = wheel(wheels)
    code = script(f"heymdep @ file://{path}")
    out = await skills.run(skill(code), {}, timeout_s=60, slot=3, publish=no_files)
    assert out.status == "success", out
    assert out.extra["runner"] == "uv", out.extra
    assert out.result == {"value": "from the wheel"}


async def test_unresolvable_dependencies_fall_back_to_the_sandbox_interpreter(
    skills: SkillRunner,
) -> None:
    code = script("heymdep @ file:///nonexistent/heymdep-1.0-py3-none-any.whl")
    out = await skills.run(skill(code), {}, timeout_s=60, slot=3, publish=no_files)
    assert out.status == "success", out
    assert out.result == {"value": None}
    assert out.extra["runner"] == "python"
    assert "uv could not prepare" in out.extra["runner_fallback"]
