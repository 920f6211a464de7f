"""The official a2a-sdk client against Heym's A2A server (the issue's acceptance points)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, UnsupportedOperationError

from libs.testing.eventually import eventually
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.a2a.helpers import a2a_user, last_task, sdk_client, send, user_message
from tests.e2e.assistant.helpers import greeter
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


async def test_card_send_and_completed_task_with_reply(system: System, model: ModelServer) -> None:
    user = await a2a_user(system, model)
    async with system.client(user.key) as c:
        wid = await greeter(c)
    model.script = Script(
        rules=[
            Rule(
                when=Match(last_is_tool_result=False),
                reply=Reply(tool_calls=[ToolCall("list_workflows", {})]),
            ),
            Rule(
                when=Match(tool_result_for="list_workflows"),
                reply=Reply(text="You have 1 workflow: Greeter."),
            ),
        ]
    )
    async with sdk_client(system.base_url, user.key) as (client, card):
        assert card.name == "Heym Agent"
        assert card.supported_interfaces[0].url == f"{system.base_url}/api/a2a"
        events = await send(client, user_message("List my workflows"))
        task = last_task(events)
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        (artifact,) = task.artifacts
        assert artifact.artifact_id == "response"
        assert artifact.name == "Heym Agent reply"
        assert artifact.parts[0].text == "You have 1 workflow: Greeter."
        assert task.context_id
        assert task.id
    assert wid


async def test_stream_shows_each_step_then_the_reply(system: System, model: ModelServer) -> None:
    user = await a2a_user(system, model)
    async with system.client(user.key) as c:
        wid = await greeter(c)
    model.script = Script(
        rules=[
            Rule(
                when=Match(last_is_tool_result=False),
                reply=Reply(tool_calls=[ToolCall("list_workflows", {})]),
            ),
            Rule(
                when=Match(tool_result_for="list_workflows"),
                reply=Reply(
                    tool_calls=[
                        ToolCall(
                            "execute_workflow", {"workflow_id": wid, "inputs": {"text": "Ada"}}
                        )
                    ]
                ),
            ),
            Rule(
                when=Match(tool_result_for="execute_workflow"),
                reply=Reply(text="It said hello to Ada."),
            ),
        ]
    )
    async with sdk_client(system.base_url, user.key, streaming=True) as (client, _):
        events = await send(client, user_message("greet Ada"))
    kinds = [ev.WhichOneof("payload") for ev in events]
    assert kinds[0] == "task"
    labels = [
        ev.status_update.status.message.parts[0].text
        for ev in events
        if ev.HasField("status_update") and ev.status_update.status.message.parts
    ]
    assert labels == ["Listing workflows", 'Running workflow "Greeter"']
    (artifact,) = [ev.artifact_update for ev in events if ev.HasField("artifact_update")]
    assert artifact.artifact.parts[0].text == "It said hello to Ada."
    assert kinds[-1] == "status_update"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_same_context_continues_the_conversation(system: System, model: ModelServer) -> None:
    user = await a2a_user(system, model)
    model.script = Script(
        rules=[
            Rule(when=Match(last_user_contains="second"), reply=Reply(text="Second answer.")),
            Rule(reply=Reply(text="First answer.")),
        ]
    )
    async with sdk_client(system.base_url, user.key) as (client, _):
        first = last_task(await send(client, user_message("first question")))
        second = last_task(
            await send(client, user_message("second question", context_id=first.context_id))
        )
    assert second.context_id == first.context_id
    assert second.id != first.id
    assert second.artifacts[0].parts[0].text == "Second answer."
    # The model saw the whole conversation.
    last = model.chat_requests[-1].body["messages"]
    texts = [str(m.get("content")) for m in last]
    assert any("first question" in t for t in texts)
    assert any("First answer." in t for t in texts)


CLARIFY = (
    "Which city?\n\n```heym-clarify\n"
    '{"questions": [{"id": "city", "text": "Which city?", "type": "text"}]}\n```'
)


async def test_input_required_is_answered_on_the_same_task(
    system: System, model: ModelServer
) -> None:
    user = await a2a_user(system, model)
    model.script = Script(
        rules=[
            Rule(when=Match(last_user_contains="Paris"), reply=Reply(text="Sunny in Paris.")),
            Rule(reply=Reply(text=CLARIFY)),
        ]
    )
    async with sdk_client(system.base_url, user.key) as (client, _):
        asked = last_task(await send(client, user_message("What is the weather?")))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert asked.status.message.parts[0].text == "Which city?"
        questions = asked.status.message.parts[1].data.struct_value["questions"]
        assert questions[0]["id"] == "city"
        done = last_task(await send(client, user_message("Paris", task_id=asked.id)))
        assert done.id == asked.id
        assert done.context_id == asked.context_id
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "Sunny in Paris."
        full = await client.get_task(GetTaskRequest(id=asked.id))
        roles = [m.role for m in full.history]
        assert roles == [Role.ROLE_USER, Role.ROLE_AGENT, Role.ROLE_USER, Role.ROLE_AGENT]
        two = await client.get_task(GetTaskRequest(id=asked.id, history_length=2))
        assert [m.parts[0].text for m in two.history] == ["Paris", "Sunny in Paris."]
        none = await client.get_task(GetTaskRequest(id=asked.id, history_length=0))
        assert len(none.history) == 0
        # A finished task takes no more messages.
        with pytest.raises(UnsupportedOperationError):
            await send(client, user_message("again", task_id=asked.id))


async def test_cancel_stops_the_running_turn(system: System, model: ModelServer) -> None:
    user = await a2a_user(system, model)
    model.script = Script(rules=[Rule(reply=Reply(text="too late", delay=30.0))])
    async with sdk_client(system.base_url, user.key) as (client, _):
        started = last_task(await send(client, user_message("think hard"), return_immediately=True))
        assert started.status.state in (
            TaskState.TASK_STATE_SUBMITTED,
            TaskState.TASK_STATE_WORKING,
        )
        await eventually(lambda: len(model.chat_requests) == 1, timeout=20)
        canceled = await client.cancel_task(CancelTaskRequest(id=started.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED

        async def ended() -> bool:
            task = await client.get_task(GetTaskRequest(id=started.id))
            return bool(task.status.state == TaskState.TASK_STATE_CANCELED)

        await eventually(ended, timeout=10)
        again = await client.cancel_task(CancelTaskRequest(id=started.id))  # idempotent
        assert again.status.state == TaskState.TASK_STATE_CANCELED
        # The turn was stopped: the next message on the context starts at once (no turn
        # is still running) and the model got nothing more for the cancelled one.
        model.script = Script(rules=[Rule(reply=Reply(text="fresh"))])

        async def next_turn() -> Task | None:
            # Until the runtime has recorded the turn's end the context is still busy (-32004).
            try:
                return last_task(
                    await send(client, user_message("again", context_id=started.context_id))
                )
            except UnsupportedOperationError:
                return None

        fresh = await eventually(next_turn, timeout=10)
        assert fresh.status.state == TaskState.TASK_STATE_COMPLETED
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=fresh.id))
    assert len(model.chat_requests) == 2


async def test_list_tasks_pages_newest_first(system: System, model: ModelServer) -> None:
    user = await a2a_user(system, model)
    model.script = Script(rules=[Rule(reply=Reply(text="ok"))])
    async with sdk_client(system.base_url, user.key) as (client, _):
        ids = [last_task(await send(client, user_message(f"task {i}"))).id for i in range(3)]
        first = await client.list_tasks(ListTasksRequest(page_size=2))
        assert first.total_size == 3
        assert first.page_size == 2
        assert [t.id for t in first.tasks] == [ids[2], ids[1]]
        assert first.next_page_token
        assert all(len(t.artifacts) == 0 for t in first.tasks)  # only with includeArtifacts
        second = await client.list_tasks(
            ListTasksRequest(page_size=2, page_token=first.next_page_token)
        )
        assert [t.id for t in second.tasks] == [ids[0]]
        assert second.next_page_token == ""
        done = await client.list_tasks(
            ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED, include_artifacts=True)
        )
        assert len(done.tasks) == 3
        assert done.tasks[0].artifacts[0].parts[0].text == "ok"


async def test_resubscribe_to_a_running_task_after_a_gateway_restart(
    system: System, model: ModelServer
) -> None:
    user = await a2a_user(system, model)
    # Two slow rounds (each under the test system's 3 s model timeout) keep it running
    # through the restart.
    model.script = Script(
        rules=[
            Rule(
                when=Match(last_is_tool_result=False),
                reply=Reply(tool_calls=[ToolCall("list_workflows", {})], delay=2.5),
            ),
            Rule(reply=Reply(text="finally", delay=2.5)),
        ]
    )
    async with sdk_client(system.base_url, user.key) as (client, _):
        started = last_task(await send(client, user_message("slow one"), return_immediately=True))
    await system.kill("gateway")
    await system.restart("gateway")
    async with sdk_client(system.base_url, user.key, streaming=True) as (client, _):
        events = [ev async for ev in client.subscribe(SubscribeToTaskRequest(id=started.id))]
    assert events[0].HasField("task")
    assert events[0].task.id == started.id
    assert events[0].task.status.state == TaskState.TASK_STATE_WORKING
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    (artifact,) = [ev.artifact_update for ev in events if ev.HasField("artifact_update")]
    assert artifact.artifact.parts[0].text == "finally"
