"""Calls to the OpenAI-compatible model: one client per credential, timeouts, error mapping."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

from libs.secrets import mask_secrets, mask_value
from libs.secrets.credentials import ResolvedCredential, client_base_url
from services.agent_runtime.compression import context_limit as compression_limit

REQUEST_TIMEOUT_S = 60.0
_REASONING = ("o1", "o3", "o4", "gpt-5")


class ModelError(Exception):
    """The model could not answer (timeout, HTTP error, malformed reply)."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = True,
        status_code: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after_s = retry_after_s


@dataclass
class ModelReply:
    message: dict[str, Any]
    model: str
    finish_reason: str | None
    usage: dict[str, int]
    elapsed_ms: float


# httpcore's pool scans all of its connections for every request and every response, so one
# client with hundreds of calls in flight spends more CPU in that scan than in the calls
# (profiled with 200 concurrent A2A tasks). A credential gets another client (pool) once each
# of its clients has this many calls in flight, up to MAX_SHARDS clients.
SHARD_CALLS = 24
MAX_SHARDS = 16


@dataclass
class _Shard:
    client: openai.AsyncOpenAI
    in_flight: int = 0


@dataclass
class ModelClients:
    """`openai.AsyncOpenAI` clients by credential (and key), reused across calls; a credential
    with many calls in flight spreads them over a few clients (`SHARD_CALLS`)."""

    timeout_s: float = REQUEST_TIMEOUT_S
    _clients: dict[tuple[str, str, str | None], list[_Shard]] = field(default_factory=dict)
    _limits: dict[tuple[str, str], int] = field(default_factory=dict)

    async def context_limit(self, cred: ResolvedCredential, model: str) -> int:
        """The model's context window, asked of the provider once per credential and model."""
        key = (cred.id, model)
        if key not in self._limits:
            self._limits[key] = await compression_limit(model, self.client(cred).models.retrieve)
        return self._limits[key]

    def client(self, cred: ResolvedCredential) -> openai.AsyncOpenAI:
        return self._shard(cred).client

    def _shard(self, cred: ResolvedCredential) -> _Shard:
        """The least busy client of the credential (a new one when all are busy)."""
        key = (cred.id, cred.api_key, client_base_url(cred))
        shards = self._clients.setdefault(key, [])
        best = min(shards, key=lambda s: s.in_flight, default=None)
        if best is None or (best.in_flight >= SHARD_CALLS and len(shards) < MAX_SHARDS):
            best = _Shard(
                openai.AsyncOpenAI(
                    api_key=cred.api_key,
                    base_url=client_base_url(cred),
                    timeout=self.timeout_s,
                    max_retries=0,  # retries are the node's policy, recorded as events
                )
            )
            shards.append(best)
        return best

    async def close(self) -> None:
        for shards in self._clients.values():
            for shard in shards:
                await shard.client.close()
        self._clients.clear()

    async def chat(
        self,
        cred: ResolvedCredential,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        temperature: float | None = 0.7,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        reasoning = any(r in model.lower() for r in _REASONING)
        kwargs: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = tool_choice or "auto"
        if reasoning:
            if reasoning_effort and reasoning_effort != "none":
                kwargs["reasoning_effort"] = reasoning_effort
            if max_tokens:
                kwargs["max_completion_tokens"] = max_tokens
        else:
            if temperature is not None:
                kwargs["temperature"] = temperature
            if max_tokens:
                kwargs["max_tokens"] = max_tokens
        if response_format:
            kwargs["response_format"] = response_format
        started = time.perf_counter()
        shard = self._shard(cred)
        shard.in_flight += 1
        try:
            # `post` with the body as built: `chat.completions.create` first walks every message
            # through the client's typed-dict transform, which took ~200 ms for a
            # 1,000-message conversation (measured); the messages are plain JSON already.
            completion = await shard.client.post(
                "/chat/completions", body=kwargs, cast_to=ChatCompletion
            )
        except openai.APITimeoutError:
            raise ModelError(
                f"model {model!r} did not answer within {self.timeout_s:.0f}s"
            ) from None
        except openai.APIStatusError as exc:
            # Providers echo keys ("Incorrect API key provided: <key>"): masked at the source,
            # so the key reaches no error, output, history row, trace or log.
            raise ModelError(
                mask_secrets(
                    f"model {model!r} answered HTTP {exc.status_code}: {_detail(exc)}",
                    [cred.api_key],
                ),
                retryable=exc.status_code >= 500 or exc.status_code in (408, 409, 429),
                status_code=exc.status_code,
                retry_after_s=retry_after(exc.response.headers.get("retry-after")),
            ) from None
        except openai.APIConnectionError as exc:
            unreachable = f"cannot reach the model endpoint: {exc}"
            raise ModelError(mask_secrets(unreachable, [cred.api_key])) from None
        finally:
            shard.in_flight -= 1
        elapsed = (time.perf_counter() - started) * 1000
        if not completion.choices:
            raise ModelError(f"model {model!r} answered without choices")
        choice = completion.choices[0]
        msg = choice.message
        message: dict[str, Any] = {"role": "assistant", "content": msg.content}
        if msg.tool_calls:
            message["tool_calls"] = [
                {
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                }
                for tc in msg.tool_calls
                if isinstance(tc, ChatCompletionMessageFunctionToolCall)
            ]
        reasoning_text = getattr(msg, "reasoning", None)
        if not msg.content and isinstance(reasoning_text, str):
            message["reasoning"] = reasoning_text
        usage = completion.usage
        return ModelReply(
            message=mask_value(message, [cred.api_key]),
            model=completion.model or model,
            finish_reason=choice.finish_reason,
            usage={
                "prompt_tokens": usage.prompt_tokens if usage else 0,
                "completion_tokens": usage.completion_tokens if usage else 0,
                "total_tokens": usage.total_tokens if usage else 0,
            },
            elapsed_ms=elapsed,
        )


def retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds (delta-seconds or an HTTP date), None when absent or unusable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
    return str(exc.message)[:500]
