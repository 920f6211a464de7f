"""The official a2a-sdk client against Heym's A2A server (the issue's acceptance points)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from a2a.types import TaskState

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
        assert task.context_id and task.id
    assert wid
