"""`get_schedule_events` (the user's cron workflows' upcoming runs) and `get_global_variables`
(names and types; a value only when asked for by name, which fixes Heym's quirk of sending
every value to the model)."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

from libs.schedules import CronError, cron_trigger, next_runs
from libs.workflow import store
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, error, text_arg

MAX_RANGE = timedelta(days=62)
MAX_EVENTS = 500


def _range(args: dict[str, Any]) -> tuple[datetime, datetime] | str:
    start_iso, end_iso = text_arg(args, "start_iso"), text_arg(args, "end_iso")
    if start_iso or end_iso:
        try:
            start = datetime.fromisoformat(start_iso.replace("Z", "+00:00"))
            end = datetime.fromisoformat(end_iso.replace("Z", "+00:00"))
        except ValueError:
            return "start_iso and end_iso must both be ISO 8601 date-times"
        start = start if start.tzinfo else start.replace(tzinfo=UTC)
        end = end if end.tzinfo else end.replace(tzinfo=UTC)
        if end <= start or end - start > MAX_RANGE:
            return "end_iso must be after start_iso, at most 62 days later"
        return start, end
    window = text_arg(args, "view_window", "week") or "week"
    if window not in ("day", "week", "month"):
        return "view_window must be day, week or month"
    ref_text = text_arg(args, "reference_date")
    try:
        ref = date.fromisoformat(ref_text) if ref_text else datetime.now(UTC).date()
    except ValueError:
        return "reference_date must be YYYY-MM-DD"
    if window == "day":
        first, last = ref, ref + timedelta(days=1)
    elif window == "week":
        first = ref - timedelta(days=ref.weekday())
        last = first + timedelta(days=7)
    else:
        first = ref.replace(day=1)
        last = (first + timedelta(days=32)).replace(day=1)
    return _midnight(first), _midnight(last)


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


async def get_schedule_events(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    span = _range(args)
    if isinstance(span, str):
        return error(span)
    start, end = span
    events: list[dict[str, Any]] = []
    for row in await store.list_workflows(env.pool, env.owner_id):
        try:
            trigger = cron_trigger(row.nodes)
        except CronError:
            continue
        if trigger is None:
            continue
        after = start - timedelta(seconds=1)
        while len(events) < MAX_EVENTS:
            batch = next_runs(trigger.schedule, after, 50)
            inside = [t for t in batch if start <= t < end]
            events += [
                {
                    "workflow_id": row.id,
                    "workflow_name": row.name,
                    "description": row.description,
                    "scheduled_at": t.isoformat(),
                }
                for t in inside
            ]
            if not batch or batch[-1] >= end:
                break
            after = batch[-1]
    events.sort(key=lambda e: e["scheduled_at"])
    return Outcome(
        {
            "events": events[:MAX_EVENTS],
            "total": len(events[:MAX_EVENTS]),
            "range_start": start.isoformat(),
            "range_end": end.isoformat(),
            "include_shared": bool(args.get("include_shared", True)),
        }
    )


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


async def get_global_variables(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    rows = await env.pool.fetch(
        "SELECT name, value FROM global_variables WHERE owner_id = $1 ORDER BY name",
        uuid.UUID(env.owner_id),
    )
    name = text_arg(args, "name")
    if name:
        found = next((r for r in rows if r["name"] == name), None)
        if found is None:
            return error(f'No global variable named "{name}"')
        return Outcome({"name": name, "value": found["value"], "value_type": _type(found["value"])})
    return Outcome(
        {
            "variables": [{"name": r["name"], "value_type": _type(r["value"])} for r in rows],
            "note": "Values are not listed; ask for one variable by name to read its value.",
        }
    )
