"""Agent context compression (Heym §4.7): summarise the middle of a long conversation."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import cast

import msgspec
import openai
from openai.types.chat import ChatCompletionMessageParam

from services.agent_runtime._compression_limits import (
    DEFAULT_CONTEXT_LIMIT,
    MODEL_CONTEXT_LIMITS,
    context_limit,
)
from services.agent_runtime.domain.compression_plan import (
    SINGLE_TURN_TAIL,
    THRESHOLD,
    Message,
    Plan,
    apply_compression,
    estimate_tokens,
    plan_at,
    plan_compression,
)

__all__ = [
    "COMPRESSION_TOOL_NAME",
    "DEFAULT_CONTEXT_LIMIT",
    "MODEL_CONTEXT_LIMITS",
    "SINGLE_TURN_TAIL",
    "SUMMARY_MAX_TOKENS",
    "SUMMARY_PROMPT",
    "THRESHOLD",
    "CompressionInfo",
    "Message",
    "Plan",
    "Summarizer",
    "SummaryError",
    "apply_compression",
    "compress",
    "compression_records",
    "context_limit",
    "estimate_tokens",
    "plan_at",
    "plan_compression",
    "summarize_with_openai",
    "summary_request",
]

log = logging.getLogger(__name__)

Summarizer = Callable[[list[Message]], Awaitable[str]]

SUMMARY_MAX_TOKENS = 1024
COMPRESSION_TOOL_NAME = "_context_compression"

SUMMARY_PROMPT = (
    "You are summarising part of an AI agent's working conversation so that the agent can "
    "continue its task with less context. The user message is a JSON array of the messages to "
    "summarise: the agent's reasoning, the tool calls it made and the tool results. Write a "
    "concise, factual summary that keeps the key findings, decisions, tool names with their "
    "important arguments and results (exact numbers, identifiers, names, URLs and errors), and "
    "anything still pending. Report only what the messages contain: do not invent, guess or "
    "add information, and do not answer the user's task yourself."
)


class SummaryError(RuntimeError):
    """The model produced no usable summary."""


class CompressionInfo(msgspec.Struct, frozen=True):
    """One compression as it happened; the summary and indices let a replay rebuild it."""

    messages_compressed: int
    messages_before_count: int
    messages_after_count: int
    tokens_before: int
    tokens_after: int
    elapsed_ms: float
    summary: str
    first_user_index: int
    tail_start_index: int


def summary_request(middle: list[Message]) -> list[Message]:
    """The messages of the summarisation call (the caller sends them with max_tokens 1024)."""
    return [
        {"role": "system", "content": SUMMARY_PROMPT},
        {"role": "user", "content": json.dumps(middle, default=str)},
    ]


async def compress(
    messages: list[Message], *, model: str, limit: int, summarize: Summarizer
) -> tuple[list[Message], CompressionInfo | None]:
    """Compress when needed. Any summarisation failure leaves the messages unchanged: the turn
    then runs on the full context, which is Heym's safe fallback."""
    plan = plan_compression(messages, limit)
    if plan is None:
        return messages, None
    started = time.perf_counter()
    try:
        summary = await summarize(summary_request(plan.middle))
    except Exception as exc:
        log.warning("context compression for %s failed, keeping all messages: %r", model, exc)
        return messages, None
    elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    # A blank summary would silently drop the middle; treat it like a failed call.
    if not isinstance(summary, str) or not summary.strip():
        log.warning("context compression for %s got an empty summary, keeping all messages", model)
        return messages, None
    result = apply_compression(messages, plan, summary)
    info = CompressionInfo(
        messages_compressed=len(plan.middle),
        messages_before_count=len(messages),
        messages_after_count=len(result),
        tokens_before=plan.tokens_before,
        tokens_after=estimate_tokens(result),
        elapsed_ms=elapsed_ms,
        summary=summary,
        first_user_index=plan.first_user_index,
        tail_start_index=plan.tail_start_index,
    )
    log.info(
        "context compressed for %s: %d -> %d messages, ~%d -> ~%d tokens",
        model,
        info.messages_before_count,
        info.messages_after_count,
        info.tokens_before,
        info.tokens_after,
    )
    return result, info


def compression_records(info: CompressionInfo) -> tuple[Message, Message, Message]:
    """Heym's three records of one compression: the `tool_calls` entry, the progress event
    and the trace (the trace carries message counts, never contents)."""
    tool_call = {
        "name": COMPRESSION_TOOL_NAME,
        "arguments": {"messages_compressed": info.messages_compressed},
        "result": {"tokens_before": info.tokens_before, "tokens_after": info.tokens_after},
        "elapsed_ms": info.elapsed_ms,
    }
    progress = {
        "phase": "compression",
        "messages_compressed": info.messages_compressed,
        "messages_before_count": info.messages_before_count,
        "messages_after_count": info.messages_after_count,
        "tokens_before": info.tokens_before,
        "tokens_after": info.tokens_after,
    }
    trace = {
        "request_type": "context.compression",
        "request": {
            "messages_before": info.messages_before_count,
            "tokens_estimated_before": info.tokens_before,
        },
        "response": {
            "messages_after": info.messages_after_count,
            "tokens_estimated_after": info.tokens_after,
        },
        "elapsed_ms": info.elapsed_ms,
    }
    return tool_call, progress, trace


def summarize_with_openai(
    client: openai.AsyncOpenAI, model: str, *, reasoning: bool = False
) -> Summarizer:
    """A summariser on the agent's own client and model. Reasoning models (o1/o3/...) reject
    `max_tokens` and a non-default temperature, so `reasoning=True` sends
    `max_completion_tokens` instead and leaves the temperature alone."""

    async def summarize(request: list[Message]) -> str:
        sent = cast("list[ChatCompletionMessageParam]", request)
        if reasoning:
            response = await client.chat.completions.create(
                model=model, messages=sent, max_completion_tokens=SUMMARY_MAX_TOKENS
            )
        else:
            response = await client.chat.completions.create(
                model=model, messages=sent, max_tokens=SUMMARY_MAX_TOKENS, temperature=0
            )
        content = response.choices[0].message.content if response.choices else None
        if not content or not content.strip():
            raise SummaryError(f"{model} returned an empty summary")
        return content

    return summarize
