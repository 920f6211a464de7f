"""The A2A task fold (pure): states from a conversation's events, streams' changes, the JSON-RPC
envelope and params, and the scripted conformance agent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from contracts.base import Envelope, Event
from contracts.chat import (
    ChatArtifactRecorded,
    ChatCancelRequested,
    ChatConversationStarted,
    ChatMessagePosted,
    ChatToolStarted,
    ChatTurnCompleted,
    ChatTurnFailed,
    ChatTurnStarted,
)
from libs.a2a import TaskBook, render, wire
from libs.chat import fold_all
from services.agent_runtime.assistant import conformance
from services.agent_runtime.assistant.domain import Idle, Record
from services.gateway.a2a.jsonrpc import RpcError, check_method, check_version, normalised, parse

pytestmark = pytest.mark.unit
CID = "c0ffee00-0000-4000-8000-000000000001"


def envs(*events: Event) -> list[Envelope]:
    return [
        Envelope(
            event_id=f"m{i}:0",
            run_id="",
            subject=f"heym.chat.{CID}.cmd",
            sequence=i + 1,
            index=0,
            recorded_at=datetime(2026, 1, 1, 0, 0, i, tzinfo=UTC),
            correlation_id=None,
            causation_id=None,
            traceparent=None,
            event=ev,
        )
        for i, ev in enumerate(events)
    ]


def posted(turn: str, task: str, mid: str = "m1") -> ChatMessagePosted:
    return ChatMessagePosted(
        message_id=turn,
        content="hi",
        task_id=task,
        a2a_message={"messageId": mid, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
    )


START = ChatConversationStarted(conversation_id=CID, owner_id="u1", source="a2a")


def test_a_turn_is_a_task_from_submitted_to_completed_with_its_reply() -> None:
    book = TaskBook(CID)
    changes = [
        c
        for e in envs(
            START,
            posted("t1", "t1"),
            ChatTurnStarted(turn_id="t1", system_prompt=""),
            ChatToolStarted(
                turn_id="t1",
                round=1,
                tool_call_id="c1",
                name="list_workflows",
                label="Listing workflows...",
            ),
            ChatTurnCompleted(turn_id="t1", text="Done."),
        )
        for c in book.fold(e)
    ]
    task = book.tasks["t1"]
    assert task.state == wire.COMPLETED
    assert [c.kind for c in changes] == ["status", "status", "status", "artifact", "status"]
    out = render(task, origin="http://h")
    assert out["artifacts"][0]["parts"] == [{"text": "Done."}]
    assert out["status"]["timestamp"] == "2026-01-01T00:00:04.000Z"
    assert [m["role"] for m in out["history"]] == ["ROLE_USER", "ROLE_AGENT"]
    assert render(task, origin="http://h", history_length=0).get("history") is None


def test_input_required_continues_on_the_same_task_and_a_cancel_is_final() -> None:
    book = TaskBook(CID).fold_all(
        envs(
            START,
            posted("t1", "t1"),
            ChatTurnStarted(turn_id="t1", system_prompt=""),
            ChatTurnCompleted(turn_id="t1", text="Which?", paused_for_clarification=True),
        )
    )
    assert book.tasks["t1"].state == wire.INPUT_REQUIRED
    more = envs(
        START,
        posted("t1", "t1"),
        ChatTurnStarted(turn_id="t1", system_prompt=""),
        ChatTurnCompleted(turn_id="t1", text="Which?", paused_for_clarification=True),
        posted("t2", "t1", "m2"),
        ChatTurnStarted(turn_id="t2", system_prompt=""),
        ChatCancelRequested(turn_id="t2", task_id="t1"),
        ChatTurnCompleted(turn_id="t2", text="late"),
    )
    book = TaskBook(CID).fold_all(more)
    task = book.tasks["t1"]
    assert task.turn_ids == ["t1", "t2"]
    assert task.state == wire.CANCELED
    assert "artifacts" not in render(task, origin="http://h")


def test_auth_required_links_rejected_and_artifact_chunks() -> None:
    book = TaskBook(CID).fold_all(
        envs(
            START,
            posted("t1", "t1"),
            ChatTurnStarted(turn_id="t1", system_prompt=""),
            ChatTurnCompleted(
                turn_id="t1",
                text="Need it.",
                credentials_needed=[{"name": "weather_key", "type": "custom"}],
            ),
        )
    )
    status = render(book.tasks["t1"], origin="https://heym.example.com")["status"]
    assert status["state"] == wire.AUTH_REQUIRED
    link = "https://heym.example.com/credentials?create=custom&name=weather_key"
    assert link in status["message"]["parts"][1]["text"]
    book = TaskBook(CID).fold_all(
        envs(
            START,
            posted("t1", "t1"),
            ChatArtifactRecorded(
                turn_id="t1",
                artifact={"artifactId": "a", "parts": [{"text": "1"}]},
                last_chunk=False,
            ),
            ChatArtifactRecorded(
                turn_id="t1", artifact={"artifactId": "a", "parts": [{"text": "2"}]}, append=True
            ),
            ChatTurnFailed(turn_id="t1", error="no", rejected=True),
        )
    )
    task = book.tasks["t1"]
    assert task.state == wire.REJECTED
    assert task.artifacts["a"]["parts"] == [{"text": "1"}, {"text": "2"}]


def test_envelope_methods_versions_and_params() -> None:
    with pytest.raises(RpcError) as err:
        parse(b"[1]")
    assert err.value.code == wire.INVALID_REQUEST
    with pytest.raises(RpcError) as err:
        parse(b"{")
    assert err.value.code == wire.PARSE_ERROR
    with pytest.raises(RpcError) as err:
        parse(b'{"jsonrpc":"2.0","id":true,"method":"GetTask"}')
    assert err.value.code == wire.INVALID_REQUEST
    call = parse(
        b'{"jsonrpc":"2.0","id":"x","method":"ListTasks","params":{"page_size":2,"pageSize":3}}'
    )
    assert call.params == {"pageSize": 3}
    for name, code in (
        ("message/send", wire.VERSION_NOT_SUPPORTED),
        ("Nope", wire.METHOD_NOT_FOUND),
    ):
        with pytest.raises(RpcError) as err:
            check_method(name)
        assert err.value.code == code
    check_version("1.0")
    check_version("1.0.1")
    for bad in (None, "", "0.3", "99.0", "1.1"):
        with pytest.raises(RpcError):
            check_version(bad)
    data: dict[str, Any] = {"message": {"context_id": "c", "metadata": {"snake_key": 1}}}
    assert normalised(data) == {"message": {"contextId": "c", "metadata": {"snake_key": 1}}}


def test_the_scripted_tck_agent_follows_the_message_id_prefix() -> None:
    def step_for(mid: str) -> Any:
        conv = fold_all(CID, envs(START, posted("t1", "t1", mid)))
        return conformance.decide(conv, 1000)

    done = step_for("tck-complete-task-1")
    assert isinstance(done, Record)
    assert done.events[-1] == ChatTurnCompleted(
        turn_id="t1", text="Hello from TCK", finished_at_ms=1000
    )
    asks = step_for("tck-input-required-1")
    assert isinstance(asks, Record)
    assert asks.events[-1].paused_for_clarification  # type: ignore[attr-defined]
    delayed = step_for("test-resubscribe-message-id-1")
    assert isinstance(delayed, Record)
    assert delayed.timers == [("tck-t1", 1000 + 4000)]
    conv = fold_all(
        CID, envs(START, posted("t1", "t1", "test-resubscribe-message-id-1"), *delayed.events)
    )
    assert isinstance(conformance.decide(conv, 2000), Idle)
