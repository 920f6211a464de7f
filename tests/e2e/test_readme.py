"""The README's example workflow, as written there, works (every README example is a test)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.system import System

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"


async def test_readme_workflow_example(system: System) -> None:
    text = README.read_text()
    create = re.search(r"-d '(\{\n.*?\n  \})'", text, re.S)
    assert create, "the README's create example moved"
    workflow = json.loads(create.group(1))
    run = re.search(r"""-d '(\{"text": "Ada"\})'\s+# (\{.*\})""", text)
    assert run, "the README's execute example moved"
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = (await c.post("/api/workflows", json=workflow)).json()["id"]
        r = await c.post(f"/api/workflows/{wid}/execute", json=json.loads(run.group(1)))
    assert r.json() == json.loads(run.group(2))
