"""Dispatching sandbox work items as the agent runtime does, and reading recorded results."""

from __future__ import annotations

import json
import uuid
from typing import Any

from contracts import subjects
from contracts.agents import ToolCallRecorded
from contracts.tools import SandboxSource, SandboxToolCancelled, SandboxToolDispatched
from libs.eventlog import EventLog


async def dispatch(
    log: EventLog,
    run_id: str,
    *,
    source: SandboxSource,
    name: str,
    arguments: dict[str, Any],
    meta: dict[str, Any],
    owner_id: str = "",
    timeout_s: float = 30.0,
    invocation_id: str | None = None,
) -> SandboxToolDispatched:
    ev = SandboxToolDispatched(
        item_id=uuid.uuid4().hex,
        invocation_id=invocation_id or uuid.uuid4().hex,
        tool_call_id=f"call_{uuid.uuid4().hex[:12]}",
        turn=1,
        name=name,
        source=source,
        arguments=json.dumps(arguments),
        meta=meta,
        timeout_s=timeout_s,
        owner_id=owner_id,
    )
    await log.append(
        subjects.work_item(run_id, "tool_sandbox", ev.item_id), [ev], expected_sequence=0
    )
    return ev


async def cancel(log: EventLog, run_id: str, ev: SandboxToolDispatched) -> None:
    await log.append(
        subjects.work_item(run_id, "tool_sandbox", ev.item_id),
        [SandboxToolCancelled(tool_call_id=ev.tool_call_id, reason="run cancelled")],
    )


async def results(log: EventLog, run_id: str, ev: SandboxToolDispatched) -> list[ToolCallRecorded]:
    envelopes = await log.read(subjects.agent(run_id, ev.invocation_id))
    return [
        e.event
        for e in envelopes
        if isinstance(e.event, ToolCallRecorded) and e.event.tool_call_id == ev.tool_call_id
    ]
