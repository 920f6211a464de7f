"""The LLM traces read model (`llm_traces`), projected from agent invocation events.

One row per model call (`chat.completions`), per compression (`context.compression`) and per
guardrail classification (`guardrail_classification`, source `guardrail`). The
request/response stored are the redacted, bounded copies recorded with each call; the owner
and workflow come from the run's row (`runs`, written by the history projection) at read time
join, so this projector needs no state between batches.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts import subjects
from contracts.agents import AgentStarted, ContextCompressed, GuardrailChecked, LlmCallRecorded
from contracts.base import Envelope
from libs.projection.statements import StatementBatch

_INVOCATION = """
    INSERT INTO agent_invocations (run_id, invocation_id, credential_id, node_id, node_label)
    VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"""

TRACE = """
    INSERT INTO llm_traces (id, run_id, invocation_id, request_type, model, request, response,
                            prompt_tokens, completion_tokens, total_tokens, elapsed_ms,
                            created_at, sequence, source, error)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
    ON CONFLICT (id) DO NOTHING"""


def invocation_of(env: Envelope) -> str:
    return env.subject.rsplit(".", 1)[-1]


class TraceProjector:
    name = "agent_runtime-traces"
    filter_subjects: Sequence[str] = (subjects.ALL_AGENT_EVENTS,)

    def project(self, envelope: Envelope, sql: StatementBatch) -> None:
        ev = envelope.event
        if isinstance(ev, AgentStarted):
            sql.add(
                _INVOCATION,
                envelope.run_id,
                ev.invocation_id,
                ev.credential_id,
                ev.node_id,
                ev.node_label,
            )
        elif isinstance(ev, LlmCallRecorded):
            request = ev.trace.get("request", {}) if ev.trace else {}
            response = ev.trace.get("response", {}) if ev.trace else {}
            sql.add(
                TRACE,
                envelope.event_id,
                envelope.run_id,
                invocation_of(envelope),
                "chat.completions",
                ev.model,
                request,
                response,
                ev.usage.get("prompt_tokens", 0),
                ev.usage.get("completion_tokens", 0),
                ev.usage.get("total_tokens", 0),
                ev.elapsed_ms,
                envelope.recorded_at,
                envelope.sequence,
                "workflow",
                None,
                phase=1,
            )
        elif isinstance(ev, ContextCompressed):
            sql.add(
                TRACE,
                envelope.event_id,
                envelope.run_id,
                invocation_of(envelope),
                "context.compression",
                "",
                {
                    "messages_before": ev.messages_before_count,
                    "tokens_estimated_before": ev.tokens_before,
                },
                {
                    "messages_after": ev.messages_after_count,
                    "tokens_estimated_after": ev.tokens_after,
                },
                0,
                0,
                0,
                ev.elapsed_ms,
                envelope.recorded_at,
                envelope.sequence,
                "workflow",
                None,
                phase=1,
            )
        elif isinstance(ev, GuardrailChecked) and ev.outcome != "skipped" and ev.model:
            sql.add(
                TRACE,
                envelope.event_id,
                envelope.run_id,
                invocation_of(envelope),
                "guardrail_classification",
                ev.model,
                ev.trace.get("request", {}) if ev.trace else {},
                {"outcome": ev.outcome, "violated": ev.violated, **(ev.trace.get("response") or {})}
                if ev.trace
                else {"outcome": ev.outcome, "violated": ev.violated},
                ev.usage.get("prompt_tokens", 0),
                ev.usage.get("completion_tokens", 0),
                ev.usage.get("total_tokens", 0),
                ev.elapsed_ms,
                envelope.recorded_at,
                envelope.sequence,
                "guardrail",
                ev.error,
                phase=1,
            )
