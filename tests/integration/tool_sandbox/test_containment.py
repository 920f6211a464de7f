"""Containment, each case a clear tool error (or a harmless result) while the sandbox keeps
serving: timeouts, memory, output floods, fork bombs, secrets, network, Python-tool tricks."""

from __future__ import annotations

import asyncio
import os

import pytest

from services.tool_sandbox.containment.policy import Containment
from services.tool_sandbox.python_tools import PythonToolRunner
from services.tool_sandbox.skills import SkillRunner
from tests.integration.tool_sandbox.conftest import no_files, skill

pytestmark = pytest.mark.integration

ECHO = "import sys, json\nprint(json.dumps({'echo': sys.stdin.read()}))"


async def still_serving(skills: SkillRunner) -> None:
    ok = await skills.run(skill(ECHO), {"input": "hi"}, timeout_s=20, slot=7, publish=no_files)
    assert ok.status == "success", ok
    assert ok.result == {"echo": "hi"}


async def test_a_skill_past_its_timeout_is_killed_with_a_clear_error(skills: SkillRunner) -> None:
    code = "import time\nopen('started', 'w').close()\ntime.sleep(30)"
    slow = skills.run(skill(code), {}, timeout_s=1, slot=0, publish=no_files)
    other = still_serving(skills)
    outcome, _ = await asyncio.wait_for(asyncio.gather(slow, other), 15)
    assert outcome.status == "timeout"
    assert outcome.result == {"error": "Skill execution timed out after 1 seconds"}


async def test_a_skill_allocating_2_gb_fails_with_out_of_memory(skills: SkillRunner) -> None:
    code = "x = bytearray(2 * 1024 ** 3)\nprint('allocated')"
    outcome = await skills.run(skill(code), {}, timeout_s=20, slot=0, publish=no_files)
    assert outcome.status == "error"
    assert "ran out of memory (limit 512 MB)" in outcome.result["error"]
    await still_serving(skills)


async def test_a_skill_printing_50_mb_is_stopped_at_the_cap(skills: SkillRunner) -> None:
    code = "import sys\nfor _ in range(50):\n    sys.stdout.write('x' * (1024 * 1024))"
    outcome = await skills.run(skill(code), {}, timeout_s=20, slot=0, publish=no_files)
    assert outcome.status == "error"
    assert "wrote more than the sandbox keeps on stdout" in outcome.result["error"]
    assert len(str(outcome.result)) < 10_000
    await still_serving(skills)


async def test_a_fork_bomb_is_refused_processes(
    skills: SkillRunner, containment: Containment
) -> None:
    if containment.uid_base is None:
        pytest.skip("the process limit needs an identity of its own (run as root)")
    code = (
        "import os, time\n"
        "kids = []\n"
        "for _ in range(1000):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        time.sleep(20)\n"
        "        os._exit(0)\n"
        "    kids.append(pid)\n"
        "print(len(kids))"
    )
    outcome = await skills.run(skill(code), {}, timeout_s=10, slot=0, publish=no_files)
    assert outcome.status == "error"
    assert "more processes than the sandbox allows" in outcome.result["error"]
    await still_serving(skills)


async def test_a_skill_finds_no_platform_secret_in_its_environment(
    skills: SkillRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEYM_SECRET_KEY", "do-not-leak-1")
    monkeypatch.setenv("HEYM_DATABASE_URL", "postgresql://leak")
    monkeypatch.setenv("DATABASE_URL", "postgresql://leak")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    code = (
        "import os, json\n"
        "print(json.dumps({k: v for k, v in os.environ.items()"
        " if k.startswith('HEYM_') or 'DATABASE' in k or 'KEY' in k or 'leak' in v}))"
    )
    outcome = await skills.run(skill(code), {}, timeout_s=20, slot=0, publish=no_files)
    assert outcome.status == "success", outcome
    assert outcome.result == {}


async def test_a_socket_to_localhost_is_refused_under_bubblewrap(
    skills: SkillRunner, containment: Containment
) -> None:
    if containment.bwrap is None:
        pytest.skip("without bubblewrap the sandbox has the host's network")
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        code = (
            "import socket, json\n"
            "s = socket.socket()\n"
            "try:\n"
            f"    s.connect(('127.0.0.1', {port})); print(json.dumps({{'connected': True}}))\n"
            "except OSError as e:\n"
            "    print(json.dumps({'connected': False, 'error': str(e)}))"
        )
        outcome = await skills.run(skill(code), {}, timeout_s=20, slot=0, publish=no_files)
    finally:
        server.close()
    assert outcome.result["connected"] is False


async def test_a_skill_cannot_read_root_only_files(
    skills: SkillRunner, containment: Containment, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    if containment.uid_base is None:
        pytest.skip("runs as the service's own identity")
    secret = tmp_path / "secret.key"
    secret.write_text("top-secret")
    os.chmod(secret, 0o600)
    code = (
        "import json\n"
        "try:\n"
        f"    print(json.dumps({{'read': open({str(secret)!r}).read()}}))\n"
        "except OSError as e:\n"
        "    print(json.dumps({'read': None, 'error': type(e).__name__}))"
    )
    outcome = await skills.run(skill(code), {}, timeout_s=20, slot=0, publish=no_files)
    assert outcome.result["read"] is None


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("def t():\n    return open('/etc/passwd').read()", "name 'open' is not defined"),
        ("def t():\n    return __import__('os').getcwd()", "name '__import__' is not allowed"),
        ("def t():\n    import os\n    return os.getcwd()", "import of 'os' is not allowed"),
        (
            "def t():\n    return ().__class__.__mro__[1].__subclasses__()",
            "attribute '__subclasses__' is not allowed",
        ),
        (
            "def t():\n    import typing\n    return typing.sys.path",
            "attribute 'sys' is not allowed",
        ),
        ("def t():\n    return '{0.__class__}'.format(1)", "format fields may not read"),
    ],
)
async def test_python_tool_tricks_are_refused(
    python_tools: PythonToolRunner, code: str, message: str
) -> None:
    outcome = await python_tools.run("t", code, {}, timeout_s=10, slot=1)
    assert outcome.status == "error"
    assert message in outcome.result["error"]


async def test_a_python_tool_runs_with_its_arguments_and_is_killed_on_timeout(
    python_tools: PythonToolRunner,
) -> None:
    code = "import math\ndef area(r):\n    return round(math.pi * r * r, 2)"
    ok = await python_tools.run("area", code, {"r": 2}, timeout_s=10, slot=1)
    assert ok.result == 12.57
    slow = "def spin():\n    while True:\n        pass"
    out = await python_tools.run("spin", slow, {}, timeout_s=1, slot=1)
    assert out.status == "timeout"
    assert out.result == {"error": "Tool execution timed out after 1 seconds"}
