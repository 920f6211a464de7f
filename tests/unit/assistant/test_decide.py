"""The assistant's decider on Heym §12.5-§12.9: given recorded events, the next step."""

from __future__ import annotations

import pytest

from contracts.chat import (
    MAX_BUILD_TEST_RUNS,
    MAX_ROUNDS,
    ChatQueuedMessageStarted,
    ChatToolFinished,
    ChatTurnCancelled,
    ChatTurnCompleted,
    ChatTurnFailed,
)
from contracts.runs import RunPauseReported
from services.agent_runtime.assistant.domain import (
    AskModel,
    CheckRun,
    FinishRun,
    Idle,
    PrepareTurn,
    Record,
    RunTool,
    StartTool,
    run_timeout_timer_id,
    wait_timer_id,
)
from services.agent_runtime.assistant.domain.build import finish_refusal, progress
from tests.unit.assistant.driver import Chat

pytestmark = pytest.mark.unit


def names(step: object) -> set[str]:
    assert isinstance(step, AskModel), step
    return {t.name for t in step.tools}


def test_a_turn_prepares_asks_runs_tools_in_order_and_answers() -> None:
    c = Chat()
    assert isinstance(c.decide(), Idle)
    c.post("m1", "list my workflows")
    step = c.decide()
    assert isinstance(step, PrepareTurn)
    assert step.turn.turn_id == "m1"
    c.started("m1")
    step = c.decide()
    assert isinstance(step, AskModel)
    assert step.round == 1
    assert {"create_workflow", "edit_workflow", "list_workflows"} <= names(step)
    assert "save_workflow" not in names(step)
    c.round("m1", 1, calls=[("a", "list_workflows", {}), ("b", "get_active_executions", {})])
    step = c.decide()
    assert isinstance(step, StartTool)
    assert step.call.call_id == "a"
    c.tool_started("m1", "a", "list_workflows")
    step = c.decide()
    assert isinstance(step, RunTool)
    assert step.call.call_id == "a"
    c.tool_finished("m1", "a", "list_workflows", {"count": 0, "workflows": []})
    step = c.decide()
    assert isinstance(step, StartTool)
    assert step.call.call_id == "b"
    c.tool_started("m1", "b", "get_active_executions")
    c.tool_finished("m1", "b", "get_active_executions", {"count": 0})
    step = c.decide()
    assert isinstance(step, AskModel)
    assert step.round == 2
    c.round("m1", 2, text="You have no workflows.")
    rec = c.record()
    (end,) = rec.events
    assert isinstance(end, ChatTurnCompleted)
    assert end.text == "You have no workflows."
    assert not end.paused_for_clarification
    assert isinstance(c.decide(), Idle)
    assert c.conv.title == "list my workflows"


def test_a_recorded_round_is_never_asked_again() -> None:
    c = Chat().post("m1", "hi").started("m1").round("m1", 1, calls=[("a", "list_workflows", {})])
    # A restarted runtime folds the same record: the next step is the tool, not the model.
    for _ in range(3):
        assert isinstance(c.decide(), StartTool)
    c.tool_started("m1", "a", "list_workflows")
    c.tool_finished("m1", "a", "list_workflows", {"count": 1})
    step = c.decide()
    assert isinstance(step, AskModel)
    assert step.round == 2


def test_a_message_posted_during_a_turn_waits_and_starts_with_the_turns_end() -> None:
    c = Chat().post("m1", "first").started("m1")
    c.post("m2", "second", starts=False)
    assert c.conv.queue == ["m2"]
    assert c.conv.current is not None
    assert c.conv.current.turn_id == "m1"
    c.round("m1", 1, text="done with first")
    rec = c.record()
    assert [type(e) for e in rec.events] == [ChatTurnCompleted, ChatQueuedMessageStarted]
    current = c.conv.current
    assert current is not None
    assert current.turn_id == "m2"
    assert c.conv.queue == []
    assert isinstance(c.decide(), PrepareTurn)


def test_a_clarifying_question_pauses_the_queue_until_the_user_answers() -> None:
    c = Chat().post("m1", "build me something").started("m1")
    c.post("m2", "queued meanwhile", starts=False)
    question = (
        "Which trigger?\n```heym-clarify\n"
        '{"questions":[{"id":"t","text":"Trigger?","type":"single"}]}\n```'
    )
    c.round("m1", 1, text=question)
    rec = c.record()
    (end,) = rec.events  # the queue does not move on
    assert isinstance(end, ChatTurnCompleted)
    assert end.paused_for_clarification
    assert c.conv.paused_by == "m1"
    assert c.conv.queue == ["m2"]
    assert isinstance(c.decide(), Idle)
    c.post("m3", "[Plan answers]\n- Trigger? → Manual")
    assert c.conv.paused_by is None
    current = c.conv.current
    assert current is not None
    assert current.turn_id == "m3"
    assert isinstance(c.decide(), PrepareTurn)


def test_a_run_tool_waits_for_the_runs_end_without_holding_anything() -> None:
    c = Chat().post("m1", "run it").started("m1")
    c.round("m1", 1, calls=[("a", "execute_workflow", {"workflow_id": "w1"})])
    assert isinstance(c.decide(), StartTool)
    c.tool_started("m1", "a", "execute_workflow", run_id="r1", timers=[run_timeout_timer_id("a")])
    assert isinstance(c.decide(), Idle)
    c.run_end("r1")
    step = c.decide()
    assert isinstance(step, FinishRun)
    assert step.end.run_id == "r1"


def test_a_run_paused_for_review_finishes_the_run_tool_pending() -> None:
    c = Chat().post("m1", "run it").started("m1")
    c.round("m1", 1, calls=[("a", "execute_workflow", {"workflow_id": "w1"})])
    c.tool_started("m1", "a", "execute_workflow", run_id="r1", timers=[run_timeout_timer_id("a")])
    c.run_paused("r2")  # another run's pause is not this call's
    assert isinstance(c.decide(), Idle)
    c.run_paused("r1")
    step = c.decide()
    assert isinstance(step, FinishRun)
    assert isinstance(step.end, RunPauseReported)
    assert step.end.review["reviewUrl"] == "http://h/review/rq1"
    c.tool_finished("m1", "a", "execute_workflow", {"status": "pending"}, status="pending")
    c.run_end("r1")  # the run's later end changes nothing for the finished call
    assert isinstance(c.decide(), AskModel)


def test_a_run_past_its_timeout_answers_running() -> None:
    c = Chat().post("m1", "run it").started("m1")
    c.round("m1", 1, calls=[("a", "execute_workflow", {"workflow_id": "w1"})])
    c.tool_started("m1", "a", "execute_workflow", run_id="r1", timers=[run_timeout_timer_id("a")])
    c.timer(run_timeout_timer_id("a"))
    rec = c.record()
    (done,) = rec.events
    assert isinstance(done, ChatToolFinished)
    assert done.status == "running"
    assert done.result["execution_history_id"] == "r1"
    assert isinstance(c.decide(), AskModel)
    c.run_end("r1")  # a late end changes nothing
    assert isinstance(c.decide(), AskModel)


def test_wait_checks_on_timers() -> None:
    c = Chat().post("m1", "wait").started("m1")
    c.round("m1", 1, calls=[("a", "wait_for_execution_update", {"execution_history_id": "r9"})])
    c.tool_started("m1", "a", "wait_for_execution_update")
    step = c.decide()
    assert isinstance(step, CheckRun)
    assert step.attempt == 1
    from contracts.chat import ChatToolChecked

    c.add(
        ChatToolChecked(turn_id="m1", tool_call_id="a", attempt=1, checked_at="t", status="running")
    )
    assert isinstance(c.decide(), Idle)
    c.timer(wait_timer_id("a", 2))
    step = c.decide()
    assert isinstance(step, CheckRun)
    assert step.attempt == 2


def test_cancel_ends_the_turn_stops_its_runs_and_clears_the_queue() -> None:
    c = Chat().post("m1", "run it").started("m1")
    c.post("m2", "later", starts=False)
    c.round("m1", 1, text="Let me run it.", calls=[("a", "execute_workflow", {"workflow_id": "w"})])
    c.tool_started("m1", "a", "execute_workflow", run_id="r1")
    c.cancel("stale-turn")  # a stale id changes nothing
    assert isinstance(c.decide(), Idle)
    assert c.conv.queue == ["m2"]
    c.cancel("m1")
    assert c.conv.queue == []
    rec = c.record()
    (end,) = rec.events
    assert isinstance(end, ChatTurnCancelled)
    assert end.partial_text == "Let me run it."
    assert rec.cancel_runs == ["r1"]
    c.run_end("r1")  # the late result is dropped
    assert isinstance(c.decide(), Idle)


def test_round_limit_fails_the_turn() -> None:
    c = Chat().post("m1", "loop").started("m1")
    for n in range(1, MAX_ROUNDS + 1):
        cid = f"c{n}"
        c.round("m1", n, calls=[(cid, "list_workflows", {})])
        c.tool_started("m1", cid, "list_workflows")
        c.tool_finished("m1", cid, "list_workflows", {"count": 0})
    rec = c.record()
    assert isinstance(rec.events[0], ChatTurnFailed)
    assert rec.events[0].error == "Too many tool rounds"


def _save(c: Chat, cid: str, revision_status: str = "created") -> None:
    c.round(
        "m1", len(c.conv.turns[-1].rounds) + 1, calls=[(cid, "save_workflow", {"workflow": {}})]
    )
    c.tool_started("m1", cid, "save_workflow")
    c.tool_finished(
        "m1",
        cid,
        "save_workflow",
        {"status": revision_status, "workflow_id": "w1", "workflow_name": "W"},
        notices=[{"type": "workflow_created", "workflow_id": "w1", "workflow_name": "W"}],
    )


def _test(c: Chat, cid: str, status: str) -> None:
    revision = progress(c.conv.turns[-1]).revision
    c.round(
        "m1",
        len(c.conv.turns[-1].rounds) + 1,
        calls=[(cid, "run_workflow_test", {"inputs": {}, "expect": "x"})],
    )
    c.tool_started("m1", cid, "run_workflow_test", run_id=f"r-{cid}")
    c.tool_finished(
        "m1", cid, "run_workflow_test", {"status": status, "revision": revision}, status=status
    )


def test_build_mode_gates_finish_and_spends_a_budget_of_five() -> None:
    c = Chat().post("m1", "build", build=True).started("m1")
    step = c.decide()
    assert {"save_workflow", "run_workflow_test", "finish"} <= names(step)
    assert "create_workflow" not in names(step)
    turn = c.conv.turns[-1]
    assert finish_refusal(progress(turn)) is not None  # nothing saved
    _save(c, "s1")
    _test(c, "t1", "error")
    assert finish_refusal(progress(turn)) is not None  # failed run
    _save(c, "s2", "saved")
    _test(c, "t2", "success")
    assert finish_refusal(progress(turn)) is None
    _save(c, "s3", "saved")  # a save un-passes it
    assert finish_refusal(progress(turn)) is not None
    for i in range(3, MAX_BUILD_TEST_RUNS + 1):
        _test(c, f"t{i}", "error")
    p = progress(turn)
    assert p.runs_used == MAX_BUILD_TEST_RUNS
    assert not p.passed
    step = c.decide()
    assert "run_workflow_test" not in names(step)
    assert "save_workflow" not in names(step)
    assert "finish" not in names(step)


def test_finish_ends_the_turn_with_its_summary_and_no_further_model_call() -> None:
    c = Chat().post("m1", "build", build=True).started("m1")
    _save(c, "s1")
    _test(c, "t1", "success")
    c.round("m1", 3, calls=[("f", "finish", {"summary": "Built and verified W."})])
    c.tool_started("m1", "f", "finish")
    c.tool_finished(
        "m1",
        "f",
        "finish",
        {"status": "success", "summary": "Built and verified W."},
        notices=[{"type": "verified", "workflow_id": "w1"}],
    )
    rec = c.record()
    (end,) = rec.events
    assert isinstance(end, ChatTurnCompleted)
    assert end.text == "Built and verified W."
    assert end.verified == {"type": "verified", "workflow_id": "w1"}
    assert end.markers == ["<!-- heym-workflow-id:w1 heym-workflow-name:W -->"]


def test_a_refused_finish_goes_back_to_the_model() -> None:
    c = Chat().post("m1", "build", build=True).started("m1")
    c.round("m1", 1, calls=[("f", "finish", {"summary": "done"})])
    c.tool_started("m1", "f", "finish")
    c.tool_finished("m1", "f", "finish", {"status": "refused", "error": "no"}, status="refused")
    step = c.decide()
    assert isinstance(step, AskModel)
    assert step.round == 2


def test_a_deleted_conversation_cancels_its_running_turn() -> None:
    from contracts.chat import ChatConversationDeleted

    c = Chat().post("m1", "hi").started("m1")
    c.add(ChatConversationDeleted())
    rec = c.record()
    assert isinstance(rec.events[0], ChatTurnCancelled)


def test_unknown_and_unparsable_calls_still_run_as_tools() -> None:
    c = Chat().post("m1", "hi").started("m1")
    c.round("m1", 1)
    c.conv.turns[-1].rounds[-1].calls.clear()
    from libs.chat import ToolCall

    c.conv.turns[-1].rounds[-1].calls.append(
        ToolCall(call_id="x", name="nope", arguments="{not json")
    )
    step = c.decide()
    assert isinstance(step, StartTool)
    assert step.call.args == {}
    assert isinstance(step.call.name, str)
    assert isinstance(Record([]), Record)
