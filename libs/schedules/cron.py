"""Cron expressions: Heym's five-field form (and six fields with seconds first, and the
predefined `@hourly`-style names), normalised to the form NATS message schedules read."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import msgspec
from croniter import croniter

PREDEFINED: Final = {
    "@yearly": "0 0 0 1 1 *",
    "@annually": "0 0 0 1 1 *",
    "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0",
    "@daily": "0 0 0 * * *",
    "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}
MAX_EXPRESSION_LENGTH: Final = 200


class CronError(ValueError):
    """A cron expression this build cannot schedule; the message says why."""


class CronTrigger(msgspec.Struct, frozen=True, kw_only=True):
    """The node that schedules a workflow and its schedule in NATS form."""

    node_id: str
    expression: str
    schedule: str


def normalise(expression: str) -> str:
    """The six-field, seconds-first form NATS reads (`0 */5 * * * *` for `*/5 * * * *`)."""
    text = " ".join(str(expression).split())
    if not text or len(text) > MAX_EXPRESSION_LENGTH:
        raise CronError("a cron expression needs 5 fields (or 6 with seconds first)")
    if text.startswith("@"):
        if text.lower() not in PREDEFINED:
            raise CronError(f"unknown cron schedule {text!r}; use one of {sorted(PREDEFINED)}")
        return PREDEFINED[text.lower()]
    fields = text.split(" ")
    if len(fields) == 5:
        fields = ["0", *fields]
    if len(fields) != 6:
        raise CronError(
            f"cron expression {text!r} has {len(fields)} fields; use 5 (minute hour day "
            "month weekday) or 6 (with seconds first)"
        )
    six = " ".join(fields)
    if not croniter.is_valid(six, second_at_beginning=True):
        raise CronError(f"cron expression {text!r} is not valid")
    return six


def cron_trigger(nodes: list[dict[str, Any]]) -> CronTrigger | None:
    """The workflow's first active `cron` node and its schedule, if it has one.

    Raises CronError for a cron node whose expression cannot be scheduled.
    """
    for node in nodes:
        if not isinstance(node, dict) or node.get("type") != "cron":
            continue
        raw = node.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if data.get("active") is False:
            continue
        expression = str(data.get("cronExpression") or "").strip()
        try:
            schedule = normalise(expression)
        except CronError as exc:
            raise CronError(f"node {node.get('id')!r}: {exc}") from None
        return CronTrigger(node_id=str(node.get("id")), expression=expression, schedule=schedule)
    return None


def next_runs(schedule: str, after: datetime, count: int = 5) -> list[datetime]:
    """The next `count` times a (normalised) schedule fires after `after` (aware, UTC)."""
    it = croniter(schedule, after, second_at_beginning=True)
    return [it.get_next(datetime) for _ in range(count)]
