"""Cron triggers: which node schedules a workflow, its expression as NATS reads it, the
schedule message on the log, and the next runs of a schedule."""

from libs.schedules.cron import CronError, CronTrigger, cron_trigger, next_runs, normalise
from libs.schedules.publisher import current_schedule, put_schedule, scheduled_workflows

__all__ = [
    "CronError",
    "CronTrigger",
    "cron_trigger",
    "current_schedule",
    "next_runs",
    "normalise",
    "put_schedule",
    "scheduled_workflows",
]
