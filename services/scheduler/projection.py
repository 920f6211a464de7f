"""The run summary read model (`runs` table), projected from run lifecycle events.

Consumes every run event and uses the lifecycle ones. The runner skips messages it applied
before; on top of that each statement is idempotent on its own (an insert that does nothing
when the row exists, updates that set values carried by the event), so replaying a message
changes nothing. Inserts run in phase 0, updates in phase 1 (see `StatementBatch`).
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts import subjects
from contracts.base import Envelope
from contracts.runs import RunCompleted, RunRequested, RunStarted
from libs.eventlog.log import utc_from_ms
from libs.projection.statements import StatementBatch

_INSERT_REQUESTED = """
    INSERT INTO runs (run_id, workflow_id, workflow_name, owner_id, status, trigger_source,
                      test_run, parent_run_id, inputs, requested_at, last_sequence)
    VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $9, $10)
    ON CONFLICT (run_id) DO NOTHING"""

_UPDATE_STARTED = """
    UPDATE runs SET started_at = $2, last_sequence = GREATEST(last_sequence, $3)
    WHERE run_id = $1"""

_UPDATE_COMPLETED = """
    UPDATE runs SET status = $2, outputs = $3, error = $4, finished_at = $5,
                    execution_time_ms = $6, last_sequence = GREATEST(last_sequence, $7)
    WHERE run_id = $1"""


class RunSummaryProjector:
    name = "scheduler-run-summaries"
    # One wildcard filter, not several: a consumer with several filters over a stream with
    # many subjects is served far more slowly by the server (measured: ~2k/s against ~30k/s).
    filter_subjects: Sequence[str] = (subjects.ALL_RUN_EVENTS,)

    def project(self, envelope: Envelope, sql: StatementBatch) -> None:
        event = envelope.event
        if isinstance(event, RunRequested):
            sql.add(
                _INSERT_REQUESTED,
                envelope.run_id,
                event.workflow_id,
                event.workflow_name,
                event.owner_id,
                event.trigger_source,
                event.test_run,
                event.parent.run_id if event.parent else None,
                event.inputs,
                envelope.recorded_at,
                envelope.sequence,
                phase=0,
            )
        elif isinstance(event, RunStarted):
            sql.add(
                _UPDATE_STARTED,
                envelope.run_id,
                utc_from_ms(event.started_at_ms),
                envelope.sequence,
                phase=1,
            )
        elif isinstance(event, RunCompleted):
            finished = (
                utc_from_ms(event.finished_at_ms) if event.finished_at_ms else envelope.recorded_at
            )
            sql.add(
                _UPDATE_COMPLETED,
                envelope.run_id,
                event.status,
                event.outputs,
                event.error,
                finished,
                event.execution_time_ms,
                envelope.sequence,
                phase=1,
            )
