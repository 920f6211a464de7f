"""sanitize_trace_payload(): a whole LLM trace write within budget, tool sections fairly."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from libs.observability.redaction import PAYLOAD_TRUNCATED, REDACTED, sanitize_trace_payload

pytestmark = pytest.mark.unit

API_KEY = "sk-ant-api03-Hq7Lw2Xk9Vb4Nm6Pz1Rt"
BEARER_VALUE = "a1b2c3d4e5f6a7b8c9d0e1f2"


def tool_turn(index: int, result: str) -> list[dict[str, Any]]:
    call = {
        "id": f"call_{index}",
        "type": "function",
        "function": {
            "name": f"tool_{index}",
            "arguments": json.dumps({"query": f"q{index}", "api_key": API_KEY}),
        },
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{index}", "content": result},
    ]


def trace(results: list[str], *, system: str = "You are helpful.") -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Authorization: Bearer {BEARER_VALUE}"},
    ]
    for index, result in enumerate(results):
        messages += tool_turn(index, result)
    return {
        "request": {"model": "gpt-test", "messages": messages, "tools": [], "temperature": 0},
        "response": {
            "content": None,
            "tool_calls": [
                {
                    "id": "call_next",
                    "type": "function",
                    "function": {"name": "final", "arguments": "{}"},
                }
            ],
            "usage": {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912},
        },
    }


def test_a_small_trace_is_only_redacted() -> None:
    payload = trace(['{"temperature": 21, "password": "pw-123"}'])
    out = sanitize_trace_payload(payload)
    text = json.dumps(out)
    assert API_KEY not in text
    assert BEARER_VALUE not in text
    assert "pw-123" not in text
    assert out["response"]["usage"]["prompt_tokens"] == 900
    tool_message = out["request"]["messages"][3]
    assert json.loads(tool_message["content"]) == {"temperature": 21, "password": REDACTED}
    arguments = out["request"]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"query": "q0", "api_key": REDACTED}


def test_a_huge_early_result_does_not_hide_later_tool_sections() -> None:
    payload = trace(["R" * 1_000_000] + [f"result {i}" for i in range(1, 10)], system="S" * 60_000)
    out = sanitize_trace_payload(payload, total_budget=32768)
    assert len(json.dumps(out)) <= 32768
    messages = out["request"]["messages"]
    tool_messages = [m for m in messages if m.get("role") == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [f"call_{i}" for i in range(10)]
    assert [m["content"] for m in tool_messages[1:]] == [f"result {i}" for i in range(1, 10)]
    calls = [c for m in messages for c in m.get("tool_calls", [])]
    assert [c["function"]["name"] for c in calls] == [f"tool_{i}" for i in range(10)]
    assert out["response"]["tool_calls"][0]["function"]["name"] == "final"


@pytest.mark.parametrize("budget", [32768, 8000, 3000, 2000])
def test_the_whole_write_stays_within_any_budget(budget: int) -> None:
    payload = trace(["x" * 50_000 for _ in range(6)], system="S" * 40_000)
    payload["request"]["tools"] = [
        {"type": "function", "function": {"name": f"t{i}", "description": "d" * 2000}}
        for i in range(30)
    ]
    out = sanitize_trace_payload(payload, total_budget=budget)
    assert len(json.dumps(out)) <= budget
    ids = [m["tool_call_id"] for m in out["request"]["messages"] if m.get("role") == "tool"]
    assert ids == [f"call_{i}" for i in range(6)]


def test_hitl_pending_copies_are_tool_records() -> None:
    payload = trace(["ok"])
    payload["response"]["_hitl_pending"] = {
        "tool_name": "send_email",
        "tool_arguments": {"to": "a@example.com", "smtp_password": "hunter2", "body": "b" * 90_000},
    }
    out = sanitize_trace_payload(payload, total_budget=6000)
    assert len(json.dumps(out)) <= 6000
    pending = out["response"]["_hitl_pending"]
    assert pending["tool_name"] == "send_email"
    assert "hunter2" not in json.dumps(out)
    assert pending["tool_arguments"] == PAYLOAD_TRUNCATED or "to" in pending["tool_arguments"]


def test_the_payload_is_not_mutated() -> None:
    payload = trace(["y" * 100_000], system="S" * 10_000)
    snapshot = copy.deepcopy(payload)
    sanitize_trace_payload(payload, total_budget=2000)
    assert payload == snapshot


def test_a_budget_too_small_for_the_structure_keeps_a_summary_of_the_tool_records() -> None:
    payload = trace([f"r{i}" for i in range(30)])
    out = sanitize_trace_payload(payload, total_budget=1200)
    assert len(json.dumps(out)) <= 1200
    assert out["truncated"] == PAYLOAD_TRUNCATED
    records = out["tool_records"]
    assert records[-1]["status"] == PAYLOAD_TRUNCATED
    assert records[0]["id"] == "call_0"
