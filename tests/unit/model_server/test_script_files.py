"""JSON script files, and the server run as its own process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import openai
import pytest

from libs.testing.model_server import ModelServer, Script

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
READY = "model-server listening on "

SCRIPT = {
    "latency": 0,
    "context_windows": {"demo-small": 4096},
    "rules": [
        {
            "name": "fail-once",
            "when": {"last_user_contains": "flaky"},
            "reply": {"error": {"status": 503, "message": "warming up"}},
            "times": 1,
        },
        {
            "name": "delegate",
            "when": {"last_user_contains": "Paris", "tools_offered": True},
            "reply": {
                "tool_calls": [
                    {"name": "call_sub_agent", "arguments": {"agent": "weather"}},
                    {"name": "call_sub_agent", "raw_arguments": "{not json"},
                ]
            },
        },
        {"name": "fallback", "reply": {"text": "from the file"}},
    ],
}


def test_a_json_file_loads_into_the_same_script_shape(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    script = Script.load(path)
    assert [r.name for r in script.rules] == ["fail-once", "delegate", "fallback"]
    assert script.rules[0].times == 1
    assert script.rules[1].reply.tool_calls[0].arguments == {"agent": "weather"}
    assert script.context_window("demo-small") == 4096
    assert Script.from_json(json.dumps(SCRIPT["rules"])).rules == script.rules


def test_unknown_script_fields_are_rejected() -> None:
    with pytest.raises(msgspec.ValidationError, match="last_user_contain"):
        Script.from_obj([{"when": {"last_user_contain": "x"}, "reply": {"text": "y"}}])


def test_a_loaded_script_drives_the_server(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    tools = [{"type": "function", "function": {"name": "call_sub_agent", "parameters": {}}}]
    paris = [{"role": "user", "content": "Paris?"}]
    with (
        ModelServer(Script.load(path)) as srv,
        openai.OpenAI(base_url=srv.base_url, api_key="t", max_retries=0) as client,
    ):
        calls = client.chat.completions.create(model="m", messages=paris, tools=tools)
        text = client.chat.completions.create(model="m", messages=paris)
        with pytest.raises(openai.APIStatusError) as failed:
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "flaky"}]
            )
    got = calls.choices[0].message.tool_calls or []
    assert [c.function.arguments for c in got] == ['{"agent":"weather"}', "{not json"]
    assert text.choices[0].message.content == "from the file"
    assert failed.value.status_code == 503


@pytest.fixture
def run_process() -> Iterator[list[subprocess.Popen[str]]]:
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def start(processes: list[subprocess.Popen[str]], *args: str) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "libs.testing.model_server", "--port", "0", *args]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    processes.append(process)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith(READY), line
    return process, line.removeprefix(READY).strip()


def test_process_mode_serves_a_script_file_and_exits_cleanly(
    tmp_path: Path, run_process: list[subprocess.Popen[str]]
) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    process, base_url = start(run_process, "--script", str(path))
    with openai.OpenAI(base_url=base_url, api_key="t", max_retries=0) as client:
        completion = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}]
        )
        window = client.models.retrieve("demo-small").model_extra or {}
    assert completion.choices[0].message.content == "from the file"
    assert window["context_window"] == 4096
    process.terminate()
    assert process.wait(timeout=15) == 0


def test_process_mode_without_a_script_answers_like_a_friendly_demo_model(
    run_process: list[subprocess.Popen[str]],
) -> None:
    process, base_url = start(run_process)
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    with openai.OpenAI(base_url=base_url, api_key="t", max_retries=0) as client:
        completion = client.chat.completions.create(
            model="any", messages=[{"role": "user", "content": "Hi there"}], tools=tools
        )
    message = completion.choices[0].message
    assert message.tool_calls is None
    assert message.content
    assert "Hi there" in message.content
    process.terminate()
    assert process.wait(timeout=15) == 0
