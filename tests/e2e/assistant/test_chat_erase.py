"""Deleting a conversation erases what was said in it: the log keeps only the delete marker
(and anything recorded after it), the read model keeps only a tombstone without title, the
conversation answers 404 and is not listed; another conversation is untouched."""

from __future__ import annotations

from collections.abc import Iterator

import asyncpg
import nats
import pytest

from contracts import subjects
from contracts.chat import ChatConversationDeleted
from libs.eventlog import EventLog
from libs.testing.eventually import eventually
from libs.testing.model_server import ModelServer, Reply, Rule, Script
from tests.e2e.agents.helpers import model_credential
from tests.e2e.assistant.helpers import conversation, turn
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

SECRET = "my tax id is 123-45-6789"


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="Noted."))])) as server:
        yield server


async def _rows(system: System, cid: str) -> dict[str, int]:
    conn = await asyncpg.connect(system.database_url)
    try:
        counts = {}
        for table in ("chat_messages", "chat_turns", "chat_tool_calls", "chat_queue_items"):
            counts[table] = int(
                await conn.fetchval(f"SELECT count(*) FROM {table} WHERE conversation_id = $1", cid)
            )
        return counts
    finally:
        await conn.close()


async def test_deleting_a_conversation_erases_it_from_log_and_read_model(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        doomed = await conversation(c)
        kept = await conversation(c)
        await turn(c, doomed, SECRET, cred)
        await turn(c, kept, "hello", cred)

        async def projected(cid: str) -> bool:
            return (await _rows(system, cid))["chat_messages"] >= 2  # the message and the reply

        await eventually(lambda: projected(doomed), timeout=20)
        await eventually(lambda: projected(kept), timeout=20)

        r = await c.delete(f"/api/chats/{doomed}")
        assert r.status_code == 204, r.text
        assert (await c.get(f"/api/chats/{doomed}")).status_code == 404
        listed = (await c.get("/api/chats")).json()
        items = listed if isinstance(listed, list) else listed.get("items", listed)
        assert doomed not in str(items)
        assert kept in str(items)

        async def erased() -> bool:
            return not any((await _rows(system, doomed)).values())

        await eventually(erased, timeout=20)
        assert await projected(kept)

    nc = await nats.connect(system.nats_url)
    try:
        log = EventLog(nc)
        left = await log.read(subjects.chat_all(doomed))
        assert isinstance(left[0].event, ChatConversationDeleted), left
        assert SECRET not in repr([env.event for env in left])
        assert len(await log.read(subjects.chat_all(kept))) > 3
    finally:
        await nc.close()
    conn = await asyncpg.connect(system.database_url)
    try:
        title = await conn.fetchval("SELECT title FROM chat_conversations WHERE id = $1", doomed)
    finally:
        await conn.close()
    assert title == ""
