"""compress() with a summariser callable, the observability records and the limit lookup."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import openai
import pytest

from services.agent_runtime.compression import (
    MODEL_CONTEXT_LIMITS,
    SUMMARY_PROMPT,
    CompressionInfo,
    apply_compression,
    compress,
    compression_records,
    context_limit,
    estimate_tokens,
    plan_compression,
)
from tests.unit.agent_compression._messages import Message, multi_turn

pytestmark = pytest.mark.unit


class Recorder:
    """A summariser that records what it was asked and answers (or raises) as told."""

    def __init__(self, answer: str | Exception = "SUMMARY") -> None:
        self.answer = answer
        self.requests: list[list[Message]] = []

    async def __call__(self, request: list[Message]) -> str:
        self.requests.append(request)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def test_below_threshold_nothing_is_asked() -> None:
    messages = multi_turn()
    summarize = Recorder()
    result, info = await compress(messages, model="m", limit=10_000_000, summarize=summarize)
    assert result is messages
    assert info is None
    assert summarize.requests == []


async def test_compression_asks_for_the_middle_and_reports_it() -> None:
    messages = multi_turn(2)
    summarize = Recorder("Key findings: tools 0 and 1 ran.")
    result, info = await compress(messages, model="m", limit=1, summarize=summarize)
    middle = messages[2:6]
    assert summarize.requests == [
        [
            {"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": json.dumps(middle)},
        ]
    ]
    assert [m["role"] for m in result] == ["system", "user", "assistant", "user"]
    assert result[2]["content"] == (
        "[Context compressed — 4 messages summarized]\nKey findings: tools 0 and 1 ran."
    )
    assert info is not None
    assert info == CompressionInfo(
        messages_compressed=4,
        messages_before_count=7,
        messages_after_count=4,
        tokens_before=estimate_tokens(messages),
        tokens_after=estimate_tokens(result),
        elapsed_ms=info.elapsed_ms,
        summary="Key findings: tools 0 and 1 ran.",
        first_user_index=1,
        tail_start_index=6,
    )
    assert info.elapsed_ms >= 0
    # The recorded summary and indices rebuild the same messages.
    plan = plan_compression(messages, 1)
    assert plan is not None
    assert apply_compression(messages, plan, info.summary) == result


@pytest.mark.parametrize(
    "answer", [RuntimeError("LLM error"), "", "   \n"], ids=["raises", "empty", "blank"]
)
async def test_a_failed_summary_leaves_the_messages_unchanged(
    answer: str | Exception, caplog: pytest.LogCaptureFixture
) -> None:
    messages = multi_turn()
    summarize = Recorder(answer)
    with caplog.at_level(logging.WARNING, logger="services.agent_runtime.compression"):
        result, info = await compress(messages, model="m", limit=1, summarize=summarize)
    assert result is messages
    assert info is None
    assert len(summarize.requests) == 1
    assert "keeping all messages" in caplog.text


def test_the_three_records() -> None:
    info = CompressionInfo(6, 9, 4, 1200, 300, 12.5, "S", 1, 8)
    tool_call, progress, trace = compression_records(info)
    assert tool_call == {
        "name": "_context_compression",
        "arguments": {"messages_compressed": 6},
        "result": {"tokens_before": 1200, "tokens_after": 300},
        "elapsed_ms": 12.5,
    }
    assert progress == {
        "phase": "compression",
        "messages_compressed": 6,
        "messages_before_count": 9,
        "messages_after_count": 4,
        "tokens_before": 1200,
        "tokens_after": 300,
    }
    assert trace == {
        "request_type": "context.compression",
        "request": {"messages_before": 9, "tokens_estimated_before": 1200},
        "response": {"messages_after": 4, "tokens_estimated_after": 300},
        "elapsed_ms": 12.5,
    }


def answering(value: Any) -> Any:
    async def retrieve(model: str) -> Any:
        if isinstance(value, Exception):
            raise value
        return value

    return retrieve


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o-2024-08-06", 128_000),
        ("GPT-4O-MINI", 128_000),
        ("gpt-4", 8_192),
        ("gpt-4-0613", 8_192),
        ("gpt-4.1-nano", 1_047_576),
        ("gpt-3.5-turbo-0125", 16_385),
        ("o3-mini-high", 200_000),
        ("o1-mini", 128_000),
        ("o1-preview", 200_000),
        ("claude-3-5-sonnet-latest", 200_000),
        ("anthropic/claude-sonnet-4-20250514", 200_000),
        ("gemini-2.0-flash-001", 1_048_576),
        ("gemini-1.5-pro-002", 2_000_000),
        ("gemini-1.5-flash", 1_000_000),
        ("some-totally-unknown-model-xyz", 128_000),
    ],
)
async def test_the_table_then_the_default(model: str, expected: int) -> None:
    assert await context_limit(model, None) == expected
    assert await context_limit(model, answering(RuntimeError("no /models"))) == expected
    assert await context_limit(model, answering({"id": model})) == expected


def test_the_table_order() -> None:
    names = [name for name, _ in MODEL_CONTEXT_LIMITS]
    assert names.index("gpt-4o") < names.index("gpt-4")
    assert len(names) == 25
    assert names[0] == "gpt-4.1"
    assert names[-1] == "gemini-1.5-flash"


@pytest.mark.parametrize(
    "card",
    [
        {"id": "x", "context_window": 32_000},
        SimpleNamespace(context_window=32_000),
        SimpleNamespace(model_extra={"context_window": 32_000}),
        openai.types.Model.model_validate(
            {"id": "x", "object": "model", "created": 0, "owned_by": "o", "context_window": 32_000}
        ),
    ],
    ids=["dict", "attribute", "model-extra", "openai-model"],
)
async def test_the_provider_value_comes_first(card: Any) -> None:
    assert await context_limit("gpt-4", answering(card)) == 32_000


@pytest.mark.parametrize("window", [0, -5, True, "32000", 3.5, None])
async def test_only_a_positive_int_counts(window: Any) -> None:
    assert await context_limit("gpt-4", answering({"context_window": window})) == 8_192
    assert await context_limit("gpt-4", answering(SimpleNamespace(context_window=window))) == 8_192
