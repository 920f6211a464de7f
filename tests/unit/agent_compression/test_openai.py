"""The OpenAI path against the scripted model server: summaries, failures, the limit lookup."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator

import openai
import pytest

from libs.testing.model_server import HttpError, Match, ModelServer, Reply, Rule, Script
from services.agent_runtime.compression import (
    SUMMARY_PROMPT,
    compress,
    context_limit,
    summarize_with_openai,
)
from tests.unit.agent_compression._messages import FIRST_USER, LAST_USER, SYSTEM, multi_turn, pairs

pytestmark = pytest.mark.integration

MODEL = "heym-test-model"
SUMMARISING = Match(system_contains="summarising part of an AI agent")


@pytest.fixture(scope="module")
def shared_server() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@pytest.fixture
def srv(shared_server: ModelServer) -> ModelServer:
    shared_server.script = Script()
    shared_server.clear_ledger()
    return shared_server


@pytest.fixture
async def client(srv: ModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    # No retries: a scripted 500 must reach compress() once, without backoff delays.
    async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0) as c:
        yield c


async def test_below_threshold_no_model_call(srv: ModelServer, client: openai.AsyncOpenAI) -> None:
    messages = multi_turn()
    summarize = summarize_with_openai(client, MODEL)
    result, info = await compress(messages, model=MODEL, limit=10_000_000, summarize=summarize)
    assert result is messages
    assert info is None
    assert srv.ledger == []


async def test_above_threshold_the_model_summarises_the_middle(
    srv: ModelServer, client: openai.AsyncOpenAI
) -> None:
    srv.script = [Rule(when=SUMMARISING, reply=Reply(text="Tools 0-2 returned results 0-2."))]
    messages = multi_turn(3)
    summarize = summarize_with_openai(client, MODEL)
    result, info = await compress(messages, model=MODEL, limit=1, summarize=summarize)
    assert result[0] == SYSTEM
    assert result[1] == FIRST_USER
    assert result[-1] == LAST_USER
    assert result[2] == {
        "role": "assistant",
        "content": "[Context compressed — 6 messages summarized]\nTools 0-2 returned results 0-2.",
    }
    assert info is not None
    assert info.messages_compressed == 6
    [entry] = srv.chat_requests
    assert entry.status == 200
    assert entry.body["model"] == MODEL
    assert entry.body["max_tokens"] == 1024
    assert entry.body["temperature"] == 0
    assert entry.body["messages"] == [
        {"role": "system", "content": SUMMARY_PROMPT},
        {"role": "user", "content": json.dumps(messages[2:8])},
    ]


async def test_single_turn_keeps_the_last_four(
    srv: ModelServer, client: openai.AsyncOpenAI
) -> None:
    srv.script = [Rule(when=SUMMARISING, reply=Reply(text="Earlier tools ran."))]
    messages = [SYSTEM, FIRST_USER, *pairs(6)]
    summarize = summarize_with_openai(client, MODEL)
    result, info = await compress(messages, model=MODEL, limit=1, summarize=summarize)
    assert len(result) == 3 + 4
    assert result[3:] == messages[-4:]
    assert info is not None
    assert info.messages_compressed == 8


async def test_reasoning_models_get_max_completion_tokens(
    srv: ModelServer, client: openai.AsyncOpenAI
) -> None:
    srv.script = [Rule(when=SUMMARISING, reply=Reply(text="ok"))]
    summarize = summarize_with_openai(client, "o3-mini", reasoning=True)
    assert await summarize([{"role": "system", "content": SUMMARY_PROMPT}]) == "ok"
    [entry] = srv.chat_requests
    assert entry.body["max_completion_tokens"] == 1024
    assert "max_tokens" not in entry.body
    assert "temperature" not in entry.body


@pytest.mark.parametrize(
    "reply",
    [Reply(error=HttpError(status=500)), Reply(text="")],
    ids=["http-500", "empty-content"],
)
async def test_a_failed_summary_leaves_the_input_unchanged(
    srv: ModelServer, client: openai.AsyncOpenAI, reply: Reply
) -> None:
    srv.script = [Rule(when=SUMMARISING, reply=reply)]
    messages = multi_turn()
    summarize = summarize_with_openai(client, MODEL)
    result, info = await compress(messages, model=MODEL, limit=1, summarize=summarize)
    assert result is messages
    assert info is None
    assert len(srv.chat_requests) == 1


async def test_the_limit_comes_from_models_retrieve(
    srv: ModelServer, client: openai.AsyncOpenAI
) -> None:
    srv.script = Script(context_windows={"gpt-4": 32_768, "custom-model": 50_000})
    assert await context_limit("gpt-4", client.models.retrieve) == 32_768
    assert await context_limit("custom-model", client.models.retrieve) == 50_000
    # The server's default card for an unlisted model.
    assert await context_limit("claude-3-5-sonnet-latest", client.models.retrieve) == 128_000
    assert [e.path for e in srv.ledger] == [
        "/v1/models/gpt-4",
        "/v1/models/custom-model",
        "/v1/models/claude-3-5-sonnet-latest",
    ]


async def test_a_card_without_a_usable_window_falls_back_to_the_table(
    srv: ModelServer, client: openai.AsyncOpenAI
) -> None:
    srv.script = Script(default_context_window=0)
    assert await context_limit("gpt-4o-2024-08-06", client.models.retrieve) == 128_000
    assert await context_limit("claude-3-5-sonnet-latest", client.models.retrieve) == 200_000
    assert await context_limit("gpt-4", client.models.retrieve) == 8_192
    assert await context_limit("unknown-model", client.models.retrieve) == 128_000


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_provider_falls_back_to_the_table() -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    async with openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
        assert await context_limit("gemini-2.0-flash-001", client.models.retrieve) == 1_048_576
        assert await context_limit("unknown-model", client.models.retrieve) == 128_000
