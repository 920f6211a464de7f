"""Agent tool calls through the tool sandbox service as durable work items: recorded once,
never run again once recorded, survive kill -9 of the sandbox, cancellable, fair."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from libs.eventlog import EventLog
from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from tests.e2e.sandbox.items import cancel, dispatch, results
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with HttpTarget() as t:
        yield t


def counting_skill(url: str, seconds: float) -> dict[str, object]:
    code = (
        "import json, sys, time, urllib.request\n"
        f"urllib.request.urlopen({url!r}).read()\n"
        f"time.sleep({seconds})\n"
        "print(json.dumps({'done': sys.stdin.read()}))\n"
    )
    return {
        "name": "Counter",
        "allowNetwork": True,
        "files": [{"path": "main.py", "content": code}],
    }


async def test_a_skill_call_is_recorded_once_on_the_agent_aggregate(
    system: System, event_log: EventLog, run_id: str
) -> None:
    owner, _ = await system.new_user()
    skill = {
        "name": "Shout",
        "files": [
            {
                "path": "main.py",
                "content": "import sys\nfrom words import up\nprint(up(sys.stdin.read()))",
            },
            {"path": "words.py", "content": "def up(s):\n    return s.upper()"},
        ],
    }
    ev = await dispatch(
        event_log,
        run_id,
        source="skill",
        name="skill_shout",
        arguments={"input": "hello"},
        meta={"skill": skill},
        owner_id=owner,
    )
    (recorded,) = await eventually(lambda: results(event_log, run_id, ev), timeout=30)
    assert recorded.status == "success"
    assert recorded.result == {"output": "HELLO", "stderr": ""}
    assert recorded.extra["runner"] in ("python", "uv")
    assert recorded.source == "skill"


async def test_kill_9_of_the_sandbox_mid_skill_runs_it_at_most_twice_and_records_once(
    system: System, event_log: EventLog, run_id: str, target: HttpTarget
) -> None:
    owner, _ = await system.new_user()
    token = uuid.uuid4().hex
    ev = await dispatch(
        event_log,
        run_id,
        source="skill",
        name="skill_counter",
        arguments={"input": "x"},
        meta={"skill": counting_skill(f"{target.url}/count/{token}", 3)},
        owner_id=owner,
    )
    await eventually(lambda: target.counts[f"/count/{token}"] >= 1, timeout=30)
    await system.kill("tool_sandbox")
    await system.restart("tool_sandbox")
    await eventually(lambda: results(event_log, run_id, ev), timeout=60)
    # the redelivered item ran once more at most, and nothing recorded it twice
    assert target.counts[f"/count/{token}"] <= 2
    await asyncio.sleep(1)
    recorded = await results(event_log, run_id, ev)
    assert len(recorded) == 1
    assert recorded[0].result == {"done": "x"}


async def test_cancelling_a_call_kills_its_process_and_records_cancelled(
    system: System, event_log: EventLog, run_id: str, target: HttpTarget
) -> None:
    owner, _ = await system.new_user()
    token = uuid.uuid4().hex
    ev = await dispatch(
        event_log,
        run_id,
        source="skill",
        name="skill_counter",
        arguments={"input": "x"},
        meta={"skill": counting_skill(f"{target.url}/count/{token}", 30)},
        owner_id=owner,
        timeout_s=60,
    )
    await eventually(lambda: target.counts[f"/count/{token}"] >= 1, timeout=30)
    await cancel(event_log, run_id, ev)
    (recorded,) = await eventually(lambda: results(event_log, run_id, ev), timeout=10)
    assert recorded.status == "cancelled"
    assert recorded.elapsed_ms < 20_000


async def test_a_python_tool_and_a_bad_call_are_recorded_as_results(
    system: System, event_log: EventLog, run_id: str
) -> None:
    ok = await dispatch(
        event_log,
        run_id,
        source="python",
        name="add",
        arguments={"a": 2, "b": 3},
        meta={"code": "def add(a, b):\n    return a + b"},
    )
    bad = await dispatch(
        event_log, run_id, source="python", name="add", arguments={}, meta={"code": "def add(:"}
    )
    (done,) = await eventually(lambda: results(event_log, run_id, ok), timeout=30)
    assert done.result == 5
    (failed,) = await eventually(lambda: results(event_log, run_id, bad), timeout=30)
    assert failed.status == "error"
    assert "SyntaxError" in failed.result["error"]
