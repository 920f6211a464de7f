"""sanitize_tool_records(): the fair budget, identity survival and the files reservation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from libs.observability.redaction import (
    FILES_RESERVATION,
    PAYLOAD_TRUNCATED,
    REDACTED,
    TRUNCATED,
    sanitize_tool_records,
)

pytestmark = pytest.mark.unit

API_KEY = "sk-live-9fK2mQ7xW4nB8vC1zL5pR3tY"
BEARER = "Bearer 7f3c9a1e5b2d4f60a8c7e9b1d3f5a7c9"
BUDGET = 32768
MEGABYTE = "r" * 1_000_000


def record(index: int, result: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {
        "tool_call_id": f"call_{index}",
        "name": f"tool_{index}",
        "status": "success",
        "source": "mcp",
        "mcp_server": "files",
        "elapsed_ms": 10 + index,
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:00:01Z",
        "arguments": {"path": f"/data/{index}.txt"},
        "result": result,
        **extra,
    }


def size(value: Any) -> int:
    return len(json.dumps(value))


def test_an_early_huge_result_cannot_hide_later_calls() -> None:
    records = [record(0, MEGABYTE)] + [record(i, {"lines": ["l"] * 20}) for i in range(1, 10)]
    out = sanitize_tool_records(records, total_budget=BUDGET)
    assert size(out) <= BUDGET
    assert [r["tool_call_id"] for r in out] == [f"call_{i}" for i in range(10)]
    assert [r["name"] for r in out] == [f"tool_{i}" for i in range(10)]
    assert all(r["status"] == "success" for r in out)
    # The small records are whole; only the huge one paid.
    assert out[1:] == [{**record(i, {"lines": ["l"] * 20})} for i in range(1, 10)]
    assert out[0]["result"].endswith(TRUNCATED)
    assert len(out[0]["result"]) <= 4096 + len(TRUNCATED)


def test_every_record_shrinks_when_all_are_large() -> None:
    records = [record(i, "x" * 20_000, arguments={"blob": "y" * 20_000}) for i in range(10)]
    out = sanitize_tool_records(records, total_budget=8000)
    assert size(out) <= 8000
    assert [r["tool_call_id"] for r in out] == [f"call_{i}" for i in range(10)]
    sizes = [size(r) for r in out]
    assert max(sizes) - min(sizes) < 50  # even shares


def test_bulky_fields_end_as_the_marker_under_a_tight_budget() -> None:
    records = [record(i, "x" * 5000, arguments="y" * 5000) for i in range(10)]
    out = sanitize_tool_records(records, total_budget=3500)
    assert size(out) <= 3500
    assert all(r["result"] == PAYLOAD_TRUNCATED for r in out)
    assert all(r["elapsed_ms"] == 10 + i for i, r in enumerate(out))


def test_identity_keys_serialise_first() -> None:
    shuffled = {"result": "r", "zeta": 1, "finished_at": "t1", "name": "n", "tool_call_id": "c"}
    (out,) = sanitize_tool_records([shuffled])
    assert list(out) == ["tool_call_id", "name", "finished_at", "result", "zeta"]


def test_secrets_are_redacted_in_records() -> None:
    records = [
        record(0, {"echo": f"key={API_KEY}"}, arguments=json.dumps({"auth": BEARER})),
        record(1, f"Authorization: {BEARER}", arguments={"api_key": API_KEY}),
    ]
    out = sanitize_tool_records(records)
    text = json.dumps(out)
    assert API_KEY not in text
    assert BEARER.split()[1] not in text
    assert out[1]["arguments"] == {"api_key": REDACTED}


def test_generated_files_are_kept_beside_the_budget() -> None:
    files = [
        {
            "id": f"f{i}",
            "filename": f"report-{i}.pdf",
            "download_url": f"https://heym.local/files/f{i}?token=abc",
            "mime_type": "application/pdf",
            "size_bytes": 1000 + i,
            "storage_path": "/internal/secret/path",
        }
        for i in range(30)
    ]
    skill = record(0, json.dumps({"output": "z" * 100_000, "_generated_files": files}))
    top_level = record(1, "done", _generated_files=files[:2])
    out = sanitize_tool_records([skill, top_level], total_budget=2000)
    without_files = [{k: v for k, v in r.items() if k != "_generated_files"} for r in out]
    assert size(without_files) <= 2000
    assert size(out) <= 2000 + FILES_RESERVATION
    kept = out[0]["_generated_files"]
    assert 0 < len(kept) <= 20
    assert set(kept[0]) == {"id", "filename", "download_url", "mime_type", "size_bytes"}
    assert kept[0]["filename"] == "report-0.pdf"
    assert "_generated_files" not in out[0]["result"]
    assert "storage_path" not in json.dumps(out)


def test_too_many_records_for_the_budget_keep_a_leading_run_and_a_count() -> None:
    records = [record(i) for i in range(400)]
    out = sanitize_tool_records(records, total_budget=4000)
    assert size(out) <= 4000
    assert out[-1]["status"] == PAYLOAD_TRUNCATED
    assert out[-1]["omitted_records"] == 400 - (len(out) - 1)
    assert out[0]["tool_call_id"] == "call_0"


def test_records_are_not_mutated() -> None:
    records = [record(0, {"password": "p", "blob": "b" * 50_000}, _generated_files=[{"id": 1}])]
    snapshot = copy.deepcopy(records)
    sanitize_tool_records(records, total_budget=1000)
    assert records == snapshot
