"""`AgentState`: one agent invocation as a fold of its own events (no loop state elsewhere).

The conversation sent to the model is rebuilt from the record: the prepared messages, then per
turn the assistant message and its tool results in call order, with recorded compressions
applied where they happened. So a runtime that restarts rebuilds exactly what it had.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from contracts.agents import (
    AgentStarted,
    ContextCompressed,
    LlmCallRecorded,
    SubAgentDispatched,
    ToolCallRecorded,
)
from contracts.base import Envelope
from contracts.nodes import NodeAttemptFailed, NodeCompleted
from services.agent_runtime.compression import apply_compression, plan_at


@dataclass
class Turn:
    llm: LlmCallRecorded
    results: dict[str, ToolCallRecorded] = field(default_factory=dict)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.llm.message.get("tool_calls") or [])

    def missing(self) -> list[dict[str, Any]]:
        return [c for c in self.tool_calls if c.get("id") not in self.results]


@dataclass
class AgentState:
    started: AgentStarted | None = None
    turns: list[Turn] = field(default_factory=list)
    compressions: dict[int, ContextCompressed] = field(default_factory=dict)
    sub_agents: dict[str, SubAgentDispatched] = field(default_factory=dict)
    finished: NodeCompleted | NodeAttemptFailed | None = None
    last_seq: int = 0

    def fold(self, env: Envelope) -> None:
        self.apply(env.event, env.sequence)

    def apply(self, ev: object, sequence: int) -> None:
        self.last_seq = max(self.last_seq, sequence)
        if isinstance(ev, AgentStarted):
            self.started = ev
        elif isinstance(ev, LlmCallRecorded):
            self.turns.append(Turn(llm=ev))
        elif isinstance(ev, ToolCallRecorded):
            self._turn(ev.turn).results[ev.tool_call_id] = ev
        elif isinstance(ev, ContextCompressed):
            self.compressions[ev.turn] = ev
        elif isinstance(ev, NodeCompleted | NodeAttemptFailed):
            self.finished = ev

    def _turn(self, number: int) -> Turn:
        return self.turns[number - 1]

    @property
    def model_turns(self) -> int:
        return sum(1 for t in self.turns if not t.llm.grace)

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as the model saw it before the next call."""
        assert self.started is not None
        messages = [dict(m) for m in self.started.messages]
        for number, turn in enumerate(self.turns, start=1):
            if number in self.compressions:
                messages = apply_recorded(messages, self.compressions[number])
            messages.append(_assistant(turn.llm.message))
            for call in turn.tool_calls:
                result = turn.results.get(call.get("id", ""))
                if result is not None:
                    messages.append(tool_message(result))
        pending = len(self.turns) + 1
        if pending in self.compressions:
            messages = apply_recorded(messages, self.compressions[pending])
        return messages


def tool_message(result: ToolCallRecorded) -> dict[str, Any]:
    content = (
        result.result if isinstance(result.result, str) else json.dumps(result.result, default=str)
    )
    return {"role": "tool", "tool_call_id": result.tool_call_id, "content": content}


def _assistant(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def apply_recorded(messages: list[dict[str, Any]], c: ContextCompressed) -> list[dict[str, Any]]:
    """Re-apply a recorded compression exactly as it was made (same indices, same summary)."""
    plan = plan_at(messages, c.first_user_index, c.tail_start_index)
    return apply_compression(messages, plan, c.summary)
