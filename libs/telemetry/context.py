"""W3C trace contexts and the span ids of a run, derived from its ids (pure: no SDK, no I/O).

A run's spans cannot be held open: its nodes run in other processes, a pause may last days and
every process may restart meanwhile. So no span id is ever remembered; each is derived from
the ids the log already holds: the run span from the run id, a node span from the run and the
invocation, an agent's tool span from the invocation and the tool call, a model call from the
turn and attempt. Any process, at any time, computes the same parent for the same work, and
the only state a run's trace needs is its trace id and sampled flag (the run's
`run_traceparent`, carried in every message's `traceparent` header).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_HEADER = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


@dataclass(frozen=True, slots=True)
class TraceContext:
    """A span's place in a trace: trace id (128 bits), span id (64 bits), sampled flag."""

    trace_id: int
    span_id: int
    sampled: bool

    def header(self) -> str:
        """The W3C `traceparent` value naming this span."""
        flags = "01" if self.sampled else "00"
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{flags}"

    def child(self, span_id: int) -> TraceContext:
        return TraceContext(self.trace_id, span_id, self.sampled)

    @property
    def trace_hex(self) -> str:
        return f"{self.trace_id:032x}"

    @staticmethod
    def parse(header: str | None) -> TraceContext | None:
        """A `traceparent` value, or None for a missing or malformed one (W3C: ignore it)."""
        if not header:
            return None
        found = _HEADER.match(header.strip())
        if found is None:
            return None
        version, trace, span, flags, rest = found.groups()
        if version == "ff" or (version == "00" and rest):
            return None
        trace_id, span_id = int(trace, 16), int(span, 16)
        if trace_id == 0 or span_id == 0:
            return None
        return TraceContext(trace_id, span_id, bool(int(flags, 16) & 1))


def derived_id(*parts: str, bits: int = 64) -> int:
    """A stable, never-zero id of `bits` bits for `parts` (BLAKE2b of the joined parts)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=bits // 8).digest()
    return int.from_bytes(digest, "big") or 1


def trace_id_for(run_id: str) -> int:
    """The trace id of a run that starts a trace of its own (no caller's context)."""
    return derived_id("trace", run_id, bits=128)


def run_span_id(run_id: str) -> int:
    return derived_id("run", run_id)


def node_span_id(run_id: str, invocation_id: str) -> int:
    return derived_id("node", run_id, invocation_id)


def tool_span_id(run_id: str, invocation_id: str, tool_call_id: str) -> int:
    return derived_id("tool", run_id, invocation_id, tool_call_id)


def chat_span_id(run_id: str, invocation_id: str, turn: int, attempt: int) -> int:
    return derived_id("chat", run_id, invocation_id, str(turn), str(attempt))


def node_context(run: TraceContext | None, run_id: str, invocation_id: str) -> TraceContext | None:
    """The span of node invocation `invocation_id` (its parent is the run span, or for a
    sub-agent the orchestrator's tool span: same trace either way)."""
    return run.child(node_span_id(run_id, invocation_id)) if run is not None else None


def tool_context(
    agent: TraceContext | None, run_id: str, invocation_id: str, tool_call_id: str
) -> TraceContext | None:
    """The span of one agent tool call, in the trace of the agent's context `agent`."""
    if agent is None:
        return None
    return agent.child(tool_span_id(run_id, invocation_id, tool_call_id))


def header_of(ctx: TraceContext | None) -> str | None:
    return ctx.header() if ctx is not None else None
