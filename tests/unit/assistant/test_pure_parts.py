"""The assistant's pure parts: tolerant DSL extraction, the credential pass, tool result
status/summary/sanitising, the DSL reference drawn from the code, conversation frames."""

from __future__ import annotations

import json

import pytest

from contracts.chat import ChatMessagePosted, ChatToolStarted, ChatTurnCancelled
from contracts.workflows import NODE_TYPES
from libs.chat import Conversation, fallback_title, step, strip_markers, workflow_marker
from libs.expressions import vocabulary
from libs.workflow.catalogue import undocumented
from services.agent_runtime.assistant.domain.results import (
    IMAGE_PLACEHOLDER,
    MAX_RESULT_CHARS,
    for_model,
    images_in,
    summary,
    tool_status,
)
from services.agent_runtime.assistant.dsl import apply_credentials, extract_workflow
from services.agent_runtime.assistant.dsl_reference import dsl_reference

pytestmark = pytest.mark.unit

WF = (
    '{"name": "  Daily   report ", '
    '"nodes": [{"id": "a", "type": "textInput", "data": {"label": "in"}}],}'
)


def test_extraction_takes_fenced_blocks_trailing_commas_and_fallbacks() -> None:
    wf = extract_workflow(f"Here it is:\n```json\n{WF}\n```\nDone.", "make a report")
    assert wf is not None
    assert wf["name"] == "Daily report"
    assert wf["edges"] == []
    assert wf["description"] == "Generated from chat request: make a report"
    nested = extract_workflow(json.dumps({"workflow": {"nodes": []}}), "x" * 80)
    assert nested is not None
    assert len(nested["name"]) <= 60
    assert extract_workflow("no json here", "goal") is None
    assert extract_workflow('```json\n{"nodes": "not a list"}\n```', "g") is None
    unnamed = extract_workflow('{"nodes": []}', "")
    assert unnamed is not None
    assert unnamed["name"] == "Generated Workflow"


def test_credential_pass_owned_only_names_to_ids_and_modes() -> None:
    owned = {"c1": {"name": "Main", "type": "openai"}}
    nodes = [
        {"id": "a", "type": "agent", "data": {"label": "a", "credentialId": "Main"}},
        {"id": "b", "type": "llm", "data": {"label": "b", "credentialId": "someone-elses"}},
        {
            "id": "c",
            "type": "llm",
            "data": {
                "label": "c",
                "credentialId": "YOUR_CREDENTIAL_ID",
                "fallbackCredentialId": "x",
                "fallbackModel": "m",
            },
        },
        {"id": "d", "type": "set", "data": {"label": "d"}},
    ]
    out = apply_credentials(
        nodes,
        owned=owned,
        chat_credential_id="c1",
        chat_model="gpt",
        mode="ask_and_create",
        existing={},
    )
    data = {n["id"]: n["data"] for n in out.nodes}
    assert data["a"]["credentialId"] == "c1"
    assert data["b"]["credentialId"] == "c1"
    assert data["b"]["model"] == "gpt"
    assert data["c"]["credentialId"] == "c1"
    assert "fallbackCredentialId" not in data["c"]
    assert out.needs == []
    assert out.to_assign == []
    none = apply_credentials(
        nodes, owned={}, chat_credential_id=None, chat_model="", mode="off", existing={}
    )
    assert [e["node"] for e in none.to_assign] == ["a", "b", "c"]
    assert none.needs == []
    asked = apply_credentials(
        nodes, owned={}, chat_credential_id=None, chat_model="", mode="ask_and_create", existing={}
    )
    assert [e["node"] for e in asked.needs] == ["a", "b", "c"]
    kept = apply_credentials(
        [{"id": "a", "type": "agent", "data": {"label": "a", "credentialId": "legacy"}}],
        owned=owned,
        chat_credential_id="c1",
        chat_model="m",
        mode="off",
        existing={"a": {"data": {"credentialId": "legacy"}}},
    )
    assert kept.nodes[0]["data"]["credentialId"] == "legacy"  # an unchanged existing value stays


def test_tool_status_and_summaries() -> None:
    assert tool_status({"status": "created"}) == "success"
    assert tool_status({"status": "requires_credentials"}) == "pending"
    assert tool_status({"status": "canceled"}) == "cancelled"
    assert tool_status({"error": "boom"}) == "error"
    assert tool_status({"execution": {"status": "error"}}) == "error"
    assert tool_status([1, 2]) == "success"
    assert summary("list_workflows", {"count": 3}, "success") == "3 workflow(s) listed"
    assert summary("x", {"error": "e" * 400}, "error") == ("Error: " + "e" * 400)[:150]
    assert (
        summary("save_workflow", {"status": "saved", "workflow_name": "W", "version": 4}, "success")
        == 'Saved "W" · version 4'
    )
    assert (
        summary(
            "run_workflow_test",
            {"attempt": 2, "status": "error", "execution_time_ms": 1300},
            "error",
        )
        == "Attempt 2/5 · error in 1.3s"
    )
    assert (
        summary("get_workflow_run_history", {"total_runs": 10, "returned": 3}, "success")
        == "10 run(s), 3 listed"
    )
    assert (
        summary("execute_workflow", {"status": "success", "outputs": {"key": "value"}}, "success")
        == "Status: success · key: value"
    )


def test_results_the_model_receives_are_sanitised() -> None:
    image = "data:image/png;base64," + "A" * 100
    result = {"outputs": {"img": image, "text": "ok"}}
    sent = for_model(result)
    assert image not in sent
    assert IMAGE_PLACEHOLDER in sent
    assert images_in(result) == [image]
    assert json.loads(
        for_model({"status": "pending", "pending_review": {"id": 1}, "big": "x"})
    ) == {"status": "pending", "pending_review": {"id": 1}}
    huge = for_model({"blob": "y" * (MAX_RESULT_CHARS + 10)})
    assert len(huge) < 3000
    assert json.loads(huge)["truncated"] is True


def test_the_dsl_reference_is_drawn_from_the_code() -> None:
    assert undocumented() == []
    text = dsl_reference()
    for name in NODE_TYPES:
        assert f"`{name}`" in text
    for names in vocabulary().values():
        for name in names:
            assert name in text
    assert "heym-clarify" not in text  # the clarify protocol stays out of the DSL reference


def test_frames_markers_and_titles() -> None:
    assert fallback_title("short") == "short"
    long = "Please build me a workflow that reads every invoice and summarises them"
    title = fallback_title(long)
    assert title.endswith("...")
    assert len(title) <= 53
    marker = workflow_marker("w1", "Inv --> Bot")
    assert strip_markers(f"Done.\n\n{marker}") == "Done."
    conv = Conversation("c")
    from datetime import UTC, datetime

    from contracts.base import Envelope

    def env(ev: object, seq: int) -> Envelope:
        return Envelope(
            event_id=f"{seq}:0",
            run_id="",
            subject="heym.chat.c.cmd",
            sequence=seq,
            index=0,
            recorded_at=datetime.now(UTC),
            correlation_id=None,
            causation_id=None,
            traceparent=None,
            event=ev,
        )  # type: ignore[arg-type]

    from contracts.chat import ChatConversationStarted, ChatRoundRecorded

    step(conv, env(ChatConversationStarted(conversation_id="c", owner_id="u"), 1))
    step(conv, env(ChatMessagePosted(message_id="m", content="hi"), 2))
    step(
        conv,
        env(
            ChatRoundRecorded(
                turn_id="m",
                round=1,
                message={
                    "content": "",
                    "tool_calls": [
                        {"id": "t", "function": {"name": "save_workflow", "arguments": "{}"}}
                    ],
                },
            ),
            3,
        ),
    )
    started = step(
        conv,
        env(
            ChatToolStarted(
                turn_id="m",
                round=1,
                tool_call_id="t",
                name="save_workflow",
                label="Saving the workflow...",
                args={"workflow": {"name": "W", "nodes": [1, 2], "edges": []}},
            ),
            4,
        ),
    )
    assert started == [
        {
            "type": "tool_start",
            "id": "t",
            "name": "save_workflow",
            "label": "Saving the workflow...",
            "args": {"name": "W", "nodes": 2, "edges": 0},
        }
    ]
    ended = step(conv, env(ChatTurnCancelled(turn_id="m"), 5))
    assert [f["type"] for f in ended] == ["tool_end", "title", "assistant_done"]
    assert ended[0]["status"] == "cancelled"
    assert ended[-1]["cancelled"] is True


def test_recorded_results_are_bounded_but_keep_their_status() -> None:
    from services.agent_runtime.assistant.domain.results import MAX_RECORDED_CHARS, bounded

    small = {"status": "success", "outputs": {"a": 1}}
    assert bounded(small) is small
    big = {
        "status": "error",
        "execution_history_id": "r1",
        "outputs": {"x": "y" * MAX_RECORDED_CHARS},
    }
    kept = bounded(big)
    assert kept["status"] == "error"
    assert kept["execution_history_id"] == "r1"
    assert kept["truncated"] is True
    assert len(json.dumps(kept)) < 10_000
