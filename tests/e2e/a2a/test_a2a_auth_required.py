"""AUTH_REQUIRED: a workflow that needs a credential the user does not have; the link; the
credential created in Heym (never through the calling agent); the same task completes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from a2a.types import TaskState

from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.a2a.helpers import a2a_user, last_task, sdk_client, send, user_message
from tests.e2e.agents.helpers import n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

WORKFLOW = {
    "name": "Weather report",
    "description": "Asks the weather service",
    "nodes": [
        n("in", "textInput", "userInput"),
        n(
            "h",
            "http",
            "weather",
            curl="curl -H 'Authorization: Bearer $credentials.weather_key' https://weather.invalid/",
        ),
        n("o", "output", "result", message="$weather.body"),
    ],
    "edges": [
        {"id": "e1", "source": "in", "target": "h"},
        {"id": "e2", "source": "h", "target": "o"},
    ],
}


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(
        Script(
            rules=[
                Rule(
                    when=Match(tool_result_contains="requires_credentials"),
                    reply=Reply(text="I need the weather_key credential first."),
                ),
                Rule(
                    when=Match(tool_result_contains='"status": "created"'),
                    reply=Reply(text="Saved the Weather report workflow."),
                ),
                Rule(
                    when=Match(last_is_tool_result=False),
                    reply=Reply(tool_calls=[ToolCall("save_workflow", {"workflow": WORKFLOW})]),
                ),
            ]
        )
    ) as server:
        yield server


async def test_missing_credential_then_created_completes_the_task(
    system: System, model: ModelServer
) -> None:
    user = await a2a_user(system, model)
    async with sdk_client(system.base_url, user.key) as (client, _):
        asked = last_task(await send(client, user_message("Build me a weather report")))
        assert asked.status.state == TaskState.TASK_STATE_AUTH_REQUIRED
        texts = [p.text for p in asked.status.message.parts if p.text]
        assert texts[0] == "I need the weather_key credential first."
        link = f"{system.base_url}/credentials?create=custom&name=weather_key"
        assert link in texts[1]
        needed = [p.data for p in asked.status.message.parts if p.HasField("data")]
        assert needed[0].struct_value["credentials"][0]["create_url"] == link
        # Not created yet: nothing is saved.
        async with system.client(user.key) as c:
            assert (await c.get("/api/workflows")).json() == []
            # The user creates it in Heym (a browser signed in to Heym), not through the agent.
            r = await c.post(
                "/api/credentials",
                json={
                    "name": "weather_key",
                    "type": "custom",
                    "base_url": "https://weather.invalid",
                    "api_key": "wk-123456789",
                },
            )
            assert r.status_code == 201, r.text
        done = last_task(await send(client, user_message("It exists now", task_id=asked.id)))
        assert done.id == asked.id
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        reply, links = done.artifacts[0].parts
        assert reply.text == "Saved the Weather report workflow."
        (flow,) = links.data.struct_value["workflows"]
        assert flow["name"] == "Weather report"
        assert flow["url"].startswith(f"{system.base_url}/workflows/")
    # The credential's value never went to the model.
    assert all("wk-123456789" not in str(e.body) for e in model.chat_requests)
