"""The example workflow `heym up` installs for the admin and runs once, to show the engine works."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.runs import RunCompleted, RunRequested
from libs.accounts import ADMIN_EMAIL
from libs.db.types import Conn
from libs.eventlog import EventLog

EXAMPLE_NAME = "Hello Heym"


def _node(nid: str, ntype: str, label: str, x: int, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": x, "y": 0},
        "data": {"label": label, **data},
    }


EXAMPLE_NODES = [
    _node("input", "textInput", "userInput", 0, inputFields=[{"key": "text"}], value="world"),
    _node(
        "greet",
        "set",
        "greeting",
        250,
        mappings=[
            {"key": "message", "value": "Hello, $userInput.text!"},
            {"key": "length", "value": "$userInput.text.length"},
        ],
    ),
    _node("out", "output", "result", 500, message="$greeting.message"),
]
EXAMPLE_EDGES = [
    {"id": "e1", "source": "input", "target": "greet"},
    {"id": "e2", "source": "greet", "target": "out"},
]


async def ensure_example(conn: Conn) -> str | None:
    """Install the example workflow for the admin (once); returns its id."""
    admin = await conn.fetchval("SELECT id FROM users WHERE email = $1", ADMIN_EMAIL)
    if admin is None:
        return None
    found = await conn.fetchval(
        "SELECT id FROM workflows WHERE owner_id = $1 AND name = $2", admin, EXAMPLE_NAME
    )
    if found is not None:
        return str(found)
    wid = uuid.uuid4()
    await conn.execute(
        """INSERT INTO workflows (id, owner_id, name, description, nodes, edges)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        wid,
        admin,
        EXAMPLE_NAME,
        "Installed by `heym up`: textInput -> set -> output.",
        EXAMPLE_NODES,
        EXAMPLE_EDGES,
    )
    await conn.execute(
        """INSERT INTO workflow_versions (workflow_id, version, name, nodes, edges)
           VALUES ($1, 1, $2, $3, $4)""",
        wid,
        EXAMPLE_NAME,
        EXAMPLE_NODES,
        EXAMPLE_EDGES,
    )
    return str(wid)


async def run_example(
    nc: NATS, workflow_id: str, owner_id: str, text: str = "world"
) -> RunCompleted:
    """Run the example through the event log, as the gateway would, and wait for its end."""
    log = EventLog(nc)
    run_id = uuid.uuid4().hex
    request = RunRequested(
        workflow_id=workflow_id,
        workflow_name=EXAMPLE_NAME,
        owner_id=owner_id,
        nodes=EXAMPLE_NODES,
        edges=EXAMPLE_EDGES,
        inputs={"headers": {}, "query": {}, "body": {"text": text}},
        trigger_source="heym up",
    )
    async with log.tail(subjects.run_all(run_id)) as queue:
        await log.append(subjects.run_commands(run_id), [request], expected_sequence=0)
        while True:
            env = await asyncio.wait_for(queue.get(), 30)
            if isinstance(env.event, RunCompleted):
                return env.event
