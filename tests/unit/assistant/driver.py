"""Given a conversation's events, when decided, then the next step: helpers for the pure domain."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from contracts.base import Event
from contracts.chat import (
    BuildRequest,
    ChatCancelRequested,
    ChatConversationStarted,
    ChatMessagePosted,
    ChatRoundRecorded,
    ChatTimerFired,
    ChatToolFinished,
    ChatToolStarted,
    ChatTurnStarted,
)
from contracts.runs import RunEndReported, RunPauseReported
from libs.chat import Conversation
from services.agent_runtime.assistant.domain import Record, Step, decide


@dataclass
class Chat:
    conv: Conversation = field(default_factory=lambda: Conversation("c1"))
    seq: int = 0
    now: int = 1_000

    def __post_init__(self) -> None:
        self.add(ChatConversationStarted(conversation_id="c1", owner_id="u1"))

    def add(self, *events: Event) -> Chat:
        self.seq += 1
        for ev in events:
            self.conv.apply(ev, self.seq)
        return self

    def decide(self) -> Step:
        return decide(self.conv, self.now)

    def record(self) -> Record:
        """Decide, expect events to record, and record them."""
        step = self.decide()
        assert isinstance(step, Record), step
        self.add(*step.events)
        return step

    # -- vocabulary -------------------------------------------------------------------------
    def post(self, mid: str, text: str, *, starts: bool = True, build: bool = False) -> Chat:
        return self.add(
            ChatMessagePosted(
                message_id=mid,
                content=text,
                credential_id="cred",
                model="m",
                starts_turn=starts,
                build=BuildRequest() if build else None,
            )
        )

    def started(self, mid: str) -> Chat:
        return self.add(ChatTurnStarted(turn_id=mid, system_prompt="sys"))

    def round(
        self,
        mid: str,
        n: int,
        text: str = "",
        calls: list[tuple[str, str, dict[str, Any]]] | None = None,
    ) -> Chat:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for cid, name, args in calls
            ]
        return self.add(ChatRoundRecorded(turn_id=mid, round=n, message=message))

    def tool_started(
        self,
        mid: str,
        cid: str,
        name: str,
        *,
        run_id: str | None = None,
        timers: list[str] | None = None,
        args: dict[str, Any] | None = None,
    ) -> Chat:
        return self.add(
            ChatToolStarted(
                turn_id=mid,
                round=1,
                tool_call_id=cid,
                name=name,
                label=name,
                args=args or {},
                run_id=run_id,
                timer_ids=timers or [],
            )
        )

    def tool_finished(
        self,
        mid: str,
        cid: str,
        name: str,
        result: Any,
        status: str = "success",
        notices: list[dict[str, Any]] | None = None,
    ) -> Chat:
        return self.add(
            ChatToolFinished(
                turn_id=mid,
                tool_call_id=cid,
                name=name,
                result=result,
                status=status,
                notices=notices or [],
            )
        )

    def run_end(self, run_id: str, status: str = "success") -> Chat:
        return self.add(RunEndReported(run_id=run_id, workflow_id="w", status=status))  # type: ignore[arg-type]

    def run_paused(self, run_id: str, request_id: str = "rq1") -> Chat:
        review = {"requestId": request_id, "reviewUrl": f"http://h/review/{request_id}"}
        return self.add(
            RunPauseReported(run_id=run_id, workflow_id="w", request_id=request_id, review=review)
        )

    def timer(self, timer_id: str) -> Chat:
        return self.add(ChatTimerFired(timer_id=timer_id))

    def cancel(self, mid: str) -> Chat:
        return self.add(ChatCancelRequested(turn_id=mid))
