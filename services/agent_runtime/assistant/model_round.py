"""A model round: the conversation rebuilt from the record, compressed when it outgrows the
model's window (the summary recorded first), one non-streaming call with the turn's tools,
recorded as `chat.round` with its (redacted, bounded) trace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from contracts.chat import ChatContextCompressed, ChatRoundRecorded
from libs.chat import Conversation
from libs.observability.redaction import sanitize_trace_payload
from libs.secrets.credentials import ResolvedCredential
from services.agent_runtime import compression
from services.agent_runtime.assistant.domain import AskModel
from services.agent_runtime.assistant.domain.decide import fail
from services.agent_runtime.assistant.messages import model_messages
from services.agent_runtime.assistant.work import Work, now_ms
from services.agent_runtime.model import ModelClients, ModelError

TEMPERATURE = 0.1
_OVERFLOW = ("context length", "context_length", "maximum context", "too many tokens")
Resolve = Callable[[str, str], Awaitable[ResolvedCredential | None]]


class ModelRound:
    def __init__(self, models: ModelClients, resolve: Resolve) -> None:
        self.models = models
        self.resolve = resolve

    async def ask(self, conv: Conversation, step: AskModel) -> Work:
        turn = step.turn
        cred = await self.resolve(turn.message.credential_id, conv.owner_id)
        if cred is None:
            return Work(
                fail(conv, turn, "The chat's model credential was not found.", now_ms()).events
            )
        model = (turn.started.model if turn.started else "") or turn.message.model
        messages = model_messages(conv, turn)
        limit = await self.models.context_limit(cred, model)
        tokens = compression.estimate_tokens(messages)
        if step.round not in turn.compressions and tokens >= compression.THRESHOLD * limit:
            compressed = await self._compress(cred, model, messages, limit, step)
            if compressed is not None:
                return Work([compressed])
        try:
            reply = await self.models.chat(
                cred,
                model=model,
                messages=messages,
                tools=[t.schema() for t in step.tools] or None,
                temperature=TEMPERATURE,
            )
        except ModelError as exc:
            overflow = any(k in str(exc).lower() for k in _OVERFLOW)
            if overflow and step.round not in turn.compressions:
                # One hard compression and a retry on a provider's "context exceeded".
                hard = int(tokens / compression.THRESHOLD) + 1
                compressed = await self._compress(cred, model, messages, hard, step)
                if compressed is not None:
                    return Work([compressed])
            return Work(fail(conv, turn, str(exc), now_ms()).events)
        # The stored trace holds what this round added (all of it for the first), so tracing
        # a long turn costs O(n) in all rather than O(n) per round.
        seen = turn.rounds[-1].recorded.request_messages + 1 if turn.rounds else 0
        added = messages[seen:] if 0 < seen <= len(messages) else messages
        trace = sanitize_trace_payload(
            {
                "request": {
                    "messages": added,
                    "messages_total": len(messages),
                    "tools": [t.name for t in step.tools],
                    "source": "dashboard_chat",
                },
                "response": reply.message,
            }
        )
        return Work(
            [
                ChatRoundRecorded(
                    turn_id=turn.turn_id,
                    round=step.round,
                    message=reply.message,
                    model=reply.model,
                    finish_reason=reply.finish_reason,
                    usage=reply.usage,
                    elapsed_ms=reply.elapsed_ms,
                    request_messages=len(messages),
                    context_tokens=tokens,
                    context_limit=limit,
                    trace=trace,
                )
            ]
        )

    async def _compress(
        self,
        cred: ResolvedCredential,
        model: str,
        messages: list[dict[str, Any]],
        limit: int,
        step: AskModel,
    ) -> ChatContextCompressed | None:
        summarize = compression.summarize_with_openai(self.models.client(cred), model)
        _, info = await compression.compress(
            messages, model=model, limit=limit, summarize=summarize
        )
        if info is None:
            return None
        return ChatContextCompressed(
            turn_id=step.turn.turn_id,
            round=step.round,
            summary=info.summary,
            first_user_index=info.first_user_index,
            tail_start_index=info.tail_start_index,
            messages_compressed=info.messages_compressed,
            messages_before_count=info.messages_before_count,
            messages_after_count=info.messages_after_count,
            tokens_before=info.tokens_before,
            tokens_after=info.tokens_after,
            elapsed_ms=info.elapsed_ms,
        )
