"""`ProcessRunner`: builds the command line and environment of a contained process and runs it.

The environment is built from nothing: a skill sees `PATH`, `HOME`, `TMPDIR`, `LANG`,
`_OUTPUT_DIR` and (under uv) uv's own settings; never the service's variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from services.tool_sandbox.containment.policy import (
    LAUNCHER,
    WORKSPACE_IN_SANDBOX,
    Containment,
    Limits,
)
from services.tool_sandbox.containment.process import Completed, run_contained
from services.tool_sandbox.workspace import OUTPUT_DIR

BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class OutputCaps:
    stdout: int = 1024 * 1024
    stderr: int = 256 * 1024


@dataclass(frozen=True)
class Launch:
    """One contained run: which interpreter, how, and where."""

    argv: list[str]
    env: dict[str, str]
    inner_workspace: str


class ProcessRunner:
    def __init__(
        self,
        containment: Containment,
        *,
        uv_bin: str | None,
        uv_cache: Path,
        caps: OutputCaps,
        limits: Limits,
    ) -> None:
        self.containment = containment
        self.uv_bin = uv_bin
        self.uv_cache = uv_cache
        self.caps = caps
        self.limits = limits

    def inner(self, workspace: Path) -> str:
        return WORKSPACE_IN_SANDBOX if self.containment.bwrap else str(workspace)

    def base_env(self, inner_ws: str) -> dict[str, str]:
        tmp = "/tmp" if self.containment.bwrap else f"{inner_ws}/.tmp"
        return {
            "PATH": BASE_PATH,
            "HOME": inner_ws,
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8",
            "_OUTPUT_DIR": f"{inner_ws}/{OUTPUT_DIR}",
        }

    def python_launch(
        self,
        workspace: Path,
        *,
        mode: str,
        script: str,
        slot: int,
        timeout_s: float,
        site: bool,
    ) -> Launch:
        """The sandbox's own interpreter running `script` (relative to the workspace, or an
        absolute path of the sandbox's code) through the launcher."""
        inner_ws = self.inner(workspace)
        limits = Limits(**{**self.limits.__dict__, "cpu_s": int(timeout_s) + 1})
        settings = self.containment.launcher_args(mode=mode, limits=limits, slot=slot, site=site)
        target = script if script.startswith("/") else f"{inner_ws}/{script}"
        argv = [self.containment.python, "-I", "-S", LAUNCHER, *settings, target]
        return Launch(argv=argv, env=self.base_env(inner_ws), inner_workspace=inner_ws)

    def uv_launch(
        self,
        workspace: Path,
        *,
        script: str,
        dependencies: list[str],
        slot: int,
        timeout_s: float,
        offline: bool = True,
    ) -> Launch:
        """`uv run python` over the base interpreter with the skill's inline dependencies."""
        assert self.uv_bin is not None
        inner_ws = self.inner(workspace)
        limits = Limits(**{**self.limits.__dict__, "cpu_s": int(timeout_s) + 1})
        settings = self.containment.launcher_args(
            mode="run", limits=limits, slot=slot, site=False, venv_site=True
        )
        argv = [self.uv_bin, "run", "--no-project", "--no-build", "--quiet"]
        if offline:
            argv.append("--offline")
        argv += ["--python", self.containment.base_python]
        for dep in dependencies:
            argv += ["--with", dep]
        argv += ["python", "-S", LAUNCHER, *settings, f"{inner_ws}/{script}"]
        env = self.base_env(inner_ws)
        env.update(
            UV_CACHE_DIR=str(self.uv_cache),
            UV_PYTHON_DOWNLOADS="never",
            UV_NO_PROGRESS="1",
            UV_NO_CONFIG="1",
        )
        return Launch(argv=argv, env=env, inner_workspace=inner_ws)

    async def run(
        self,
        launch: Launch,
        workspace: Path,
        *,
        stdin: bytes,
        timeout_s: float,
        network: bool = False,
    ) -> Completed:
        argv = self.containment.wrap(
            launch.argv,
            workspace=str(workspace),
            env=launch.env,
            network=network,
            cwd=launch.inner_workspace,
        )
        env = {"PATH": BASE_PATH} if self.containment.bwrap else launch.env
        return await run_contained(
            argv,
            env=env,
            stdin=stdin,
            timeout_s=timeout_s,
            max_stdout=self.caps.stdout,
            max_stderr=self.caps.stderr,
            cwd=None if self.containment.bwrap else str(workspace),
        )
