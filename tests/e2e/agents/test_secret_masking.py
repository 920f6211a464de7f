"""Issue #7 item 7: a provider's error text that echoes the stored key never shows the key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from libs.testing.eventually import eventually
from libs.testing.model_server import HttpError, ModelServer, Reply, Rule, Script
from tests.e2e.agents.helpers import agent, create, e, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

# No well-known key shape: only masking by the stored value can catch it.
KEY = "heym-e2e-Zq81xV0-stored-credential-value"


@pytest.fixture
def model() -> Iterator[ModelServer]:
    rejecting = Reply(
        error=HttpError(
            status=401,
            message=f"Incorrect API key provided: {KEY}. You can find your API key at ...",
            type="invalid_request_error",
        )
    )
    with ModelServer(Script(rules=[Rule(reply=rejecting)])) as server:
        yield server


async def test_a_key_echoed_by_the_provider_is_masked_everywhere(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        r = await c.post(
            "/api/credentials",
            json={"name": "echoing", "type": "custom", "base_url": model.base_url, "api_key": KEY},
        )
        cred = r.json()["id"]
        wid = await create(
            c, [n("in", "textInput", "req"), agent("a", "bot", cred)], [e("in", "a")]
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "hi"},
            headers={"X-Simple-Response": "false"},
        )
        answer = r.text
        assert "HTTP 401" in answer
        assert "Incorrect API key provided" in answer
        assert len(model.chat_requests) >= 1  # the key really was sent to the provider

        async def recorded() -> dict[str, Any]:
            body = (await c.get(f"/api/workflows/{wid}/history")).json()
            assert body["total"] == 1, body
            return dict(body)

        history = await eventually(recorded, timeout=20)
        entry = (await c.get(f"/api/workflows/{wid}/history/{history['items'][0]['id']}")).text

        # Failed calls record no trace today; whatever traces there are must be clean too.
        traces = (await c.get("/api/traces", params={"workflow_id": wid})).json()["items"]
        details = [(await c.get(f"/api/traces/{t['id']}")).text for t in traces]
    seen = {"execute answer": answer, "history entry": entry, "traces": json.dumps(details)}
    seen["agent_runtime log"] = system.children["agent_runtime"].log_path.read_text(
        errors="replace"
    )
    for where, text in seen.items():
        assert KEY not in text, where
    assert "[REDACTED]" in answer
