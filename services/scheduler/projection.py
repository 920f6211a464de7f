"""The execution-history read model (`runs` and `run_nodes`), projected from run events.

Consumes every run event and uses the lifecycle ones. The runner skips messages it applied
before; on top of that each statement is idempotent on its own (an insert that does nothing
when the row exists, updates that set values carried by the event), so replaying a message
changes nothing. Inserts run in phase 0, updates in phase 1 (see `StatementBatch`).
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts import subjects
from contracts.base import Envelope
from contracts.nodes import NodeCompleted, NodeRetryScheduled
from contracts.runs import RunCompleted, RunPaused, RunRequested, RunResumed, RunStarted
from libs.db.globals import PERSIST_RUN_GLOBALS
from libs.eventlog.log import utc_from_ms
from libs.projection.statements import StatementBatch
from libs.results import node_result, retry_result

_INSERT_REQUESTED = """
    INSERT INTO runs (run_id, workflow_id, workflow_name, owner_id, status, trigger_source,
                      test_run, parent_run_id, inputs, requested_at, last_sequence, depth,
                      parent_invocation_id)
    VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $9, $10, $11, $12)
    ON CONFLICT (run_id) DO NOTHING"""

_UPSERT_NODE = """
    INSERT INTO run_nodes (run_id, invocation_id, node_id, node_label, node_type, status, output,
                           error, execution_time_ms, metadata, sequence)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (run_id, invocation_id) DO UPDATE SET
        status = EXCLUDED.status, output = EXCLUDED.output, error = EXCLUDED.error,
        execution_time_ms = EXCLUDED.execution_time_ms, metadata = EXCLUDED.metadata,
        sequence = EXCLUDED.sequence
    WHERE run_nodes.sequence <= EXCLUDED.sequence"""

_UPDATE_STARTED = """
    UPDATE runs SET started_at = $2, last_sequence = GREATEST(last_sequence, $3)
    WHERE run_id = $1"""

_UPDATE_COMPLETED = """
    UPDATE runs SET status = $2, outputs = $3, error = $4, finished_at = $5,
                    execution_time_ms = $6, last_sequence = GREATEST(last_sequence, $7),
                    http_status = $8
    WHERE run_id = $1"""


_UPDATE_PAUSED = """
    UPDATE runs SET status = 'pending', outputs = $2, execution_time_ms = $3,
                    last_sequence = GREATEST(last_sequence, $4)
    WHERE run_id = $1 AND finished_at IS NULL"""

_UPDATE_RESUMED = """
    UPDATE runs SET status = 'running', last_sequence = GREATEST(last_sequence, $2)
    WHERE run_id = $1 AND finished_at IS NULL"""


class HistoryProjector:
    name = "scheduler-history"
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
                event.depth,
                event.parent.invocation_id if event.parent else None,
                phase=0,
            )
        elif isinstance(event, NodeCompleted):
            self._node_row(envelope, node_result(envelope, event), sql)
        elif isinstance(event, NodeRetryScheduled):
            self._node_row(envelope, retry_result(envelope, event), sql)
        elif isinstance(event, RunStarted):
            sql.add(
                _UPDATE_STARTED,
                envelope.run_id,
                utc_from_ms(event.started_at_ms),
                envelope.sequence,
                phase=1,
            )
        elif isinstance(event, RunPaused):
            # Waiting for a human review: the same row goes on after the decision.
            sql.add(
                _UPDATE_PAUSED,
                envelope.run_id,
                event.outputs,
                event.execution_time_ms,
                envelope.sequence,
                phase=1,
            )
        elif isinstance(event, RunResumed):
            sql.add(_UPDATE_RESUMED, envelope.run_id, envelope.sequence, phase=1)
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
                event.http_status,
                phase=1,
            )
            # `isGlobal` variables are persisted once the run has ended (Heym: after the run).
            sql.add(PERSIST_RUN_GLOBALS, envelope.run_id, phase=2)

    @staticmethod
    def _node_row(envelope: Envelope, row: dict[str, object], sql: StatementBatch) -> None:
        metadata = row["metadata"]
        assert isinstance(metadata, dict)
        sql.add(
            _UPSERT_NODE,
            envelope.run_id,
            str(metadata["invocation_id"]),
            row["node_id"],
            row["node_label"],
            row["node_type"],
            row["status"],
            row["output"],
            row["error"],
            row["execution_time_ms"],
            metadata,
            metadata["sequence"],
            phase=1,
        )
