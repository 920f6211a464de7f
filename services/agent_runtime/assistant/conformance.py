"""A2A conformance mode (`HEYM_A2A_CONFORMANCE=1`): a scripted agent for the A2A TCK.

The TCK drives the agent by the messageId prefix of each message (its scenario contract,
`scenarios/*.feature` of a2aproject/a2a-tck): complete, ask for input, answer with a message
only, reject, produce text/file/data artifacts (one chunked), or work for a while and then
complete. This decider replaces the model-driven one for A2A conversations, and only when
the setting is on: in normal mode no request content ever chooses it. Everything else is
the real system: the turn's events are recorded on the conversation's log like any turn, so
the task store, the streams, cancellation and auth the TCK checks are the ones users get.

Pure: `decide(conversation, now_ms)` returns a step like the real decider's.
"""

from __future__ import annotations

import base64
from typing import Any, Final

from contracts.base import Event
from contracts.chat import (
    ChatArtifactRecorded,
    ChatTurnCompleted,
    ChatTurnFailed,
    ChatTurnStarted,
)
from libs.chat import Conversation, Turn
from services.agent_runtime.assistant.domain.decide import Idle, Record, Step, cancelled

MODEL: Final = "a2a-tck-script"
WORK_S: Final = 4.0  # "wait for 2x streaming timeout" (the TCK's reference agent waits 4 s)
GREETING: Final = "Hello from TCK"


def _text(text: str) -> dict[str, Any]:
    return {"text": text}


_FILE = {
    "raw": base64.b64encode(b"tck").decode(),
    "filename": "output.txt",
    "mediaType": "text/plain",
}
_FILE_URL = {
    "url": "https://example.com/output.txt",
    "filename": "output.txt",
    "mediaType": "text/plain",
}
_DATA = {"data": {"key": "value", "count": 42}, "mediaType": "application/json"}

# prefix -> the artifact parts a completing scenario produces (longest prefixes first)
ARTIFACTS: Final[tuple[tuple[str, list[dict[str, Any]]], ...]] = (
    ("tck-stream-artifact-text", [_text("Streamed text content")]),
    ("tck-stream-artifact-file", [_FILE]),
    ("tck-stream-ordering-001", [_text("Ordered output")]),
    ("tck-stream-001", [_text("Stream hello from TCK")]),
    ("tck-stream-003", [_text("Stream task lifecycle")]),
    ("tck-artifact-file-url", [_FILE_URL]),
    ("tck-artifact-text", [_text("Generated text content")]),
    ("tck-artifact-file", [_FILE]),
    ("tck-artifact-data", [_DATA]),
)
DELAYED: Final = ("test-resubscribe-message-id", "tck-delayed-complete")


def message_id(turn: Turn) -> str:
    sent = turn.message.a2a_message or {}
    return str(sent.get("messageId") or "")


def timer_id(turn: Turn) -> str:
    return f"tck-{turn.turn_id}"


def decide(conv: Conversation, now_ms: int) -> Step:
    turn = conv.current
    if turn is None:
        return Idle("no running turn")
    if turn.cancel is not None or conv.deleted:
        return cancelled(turn, now_ms)
    mid = message_id(turn)
    tid = turn.turn_id
    if turn.started is None:
        started = ChatTurnStarted(
            turn_id=tid,
            system_prompt="(A2A conformance mode: the scripted TCK agent)",
            model=MODEL,
            started_at_ms=now_ms,
        )
        if mid.startswith(DELAYED):
            return Record([started], timers=[(timer_id(turn), now_ms + int(WORK_S * 1000))])
        return Record([started, *_scenario(tid, mid, now_ms)])
    if timer_id(turn) in conv.timers_fired:
        return Record([_complete(tid, "", now_ms)])
    return Idle("the scripted task is working")


def _complete(turn_id: str, text: str, now_ms: int, **extra: Any) -> ChatTurnCompleted:
    return ChatTurnCompleted(turn_id=turn_id, text=text, finished_at_ms=now_ms, **extra)


def _scenario(tid: str, mid: str, now_ms: int) -> list[Event]:
    if mid.startswith("tck-stream-artifact-chunked"):
        return [
            ChatArtifactRecorded(
                turn_id=tid,
                artifact={"artifactId": "chunked", "parts": [_text("chunk-1 ")]},
                append=False,
                last_chunk=False,
            ),
            ChatArtifactRecorded(
                turn_id=tid,
                artifact={"artifactId": "chunked", "parts": [_text("chunk-2")]},
                append=True,
                last_chunk=True,
            ),
            _complete(tid, "", now_ms),
        ]
    for prefix, parts in ARTIFACTS:
        if mid.startswith(prefix):
            artifact = {"artifactId": "artifact-1", "name": "TCK artifact", "parts": parts}
            return [
                ChatArtifactRecorded(turn_id=tid, artifact=artifact),
                _complete(tid, "", now_ms),
            ]
    if mid.startswith("tck-stream-002"):
        return [_complete(tid, "", now_ms)]
    if mid.startswith("tck-message-response"):
        return [_complete(tid, "Direct message response", now_ms, message_only=True)]
    if mid.startswith("tck-input-required"):
        return [
            _complete(
                tid,
                "Input required: send the follow-up message.",
                now_ms,
                paused_for_clarification=True,
            )
        ]
    if mid.startswith("tck-reject-task"):
        return [ChatTurnFailed(turn_id=tid, error="rejected", finished_at_ms=now_ms, rejected=True)]
    return [_complete(tid, GREETING, now_ms)]
