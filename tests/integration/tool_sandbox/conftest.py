"""The sandbox's executors over real contained processes (bubblewrap where installed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uv

from services.tool_sandbox.containment.policy import Containment, Limits, plan
from services.tool_sandbox.processes import OutputCaps, ProcessRunner
from services.tool_sandbox.python_tools import PythonToolRunner
from services.tool_sandbox.skills import SkillRunner


@pytest.fixture(scope="session")
def sandbox_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sandbox-data")


@pytest.fixture(scope="session", params=["auto", "off"], ids=["bwrap-if-installed", "rlimits"])
def containment(sandbox_dir: Path, request: pytest.FixtureRequest) -> Containment:
    cache = sandbox_dir / "uv-cache"
    cache.mkdir(exist_ok=True)
    return plan(
        bubblewrap=request.param,
        data_dir=sandbox_dir,
        uid_base=61000,
        uv_cache=cache,
        uv_bin=str(uv.find_uv_bin()),
    )


@pytest.fixture(scope="session")
def processes(containment: Containment, sandbox_dir: Path) -> ProcessRunner:
    return ProcessRunner(
        containment,
        uv_bin=str(uv.find_uv_bin()),
        uv_cache=sandbox_dir / "uv-cache",
        caps=OutputCaps(),
        limits=Limits(),
    )


@pytest.fixture(scope="session")
def skills(processes: ProcessRunner, sandbox_dir: Path) -> SkillRunner:
    return SkillRunner(processes, work_root=sandbox_dir / "work", runner="auto")


@pytest.fixture(scope="session")
def python_tools(processes: ProcessRunner, sandbox_dir: Path) -> PythonToolRunner:
    return PythonToolRunner(processes, work_root=sandbox_dir / "work")


async def no_files(ws: Path, result: Any) -> tuple[Any, list[dict[str, Any]]]:
    return result, []


def skill(code: str, name: str = "probe", **extra: Any) -> dict[str, Any]:
    return {"name": name, "files": [{"path": "main.py", "content": code}], **extra}
