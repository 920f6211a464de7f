"""The scheduler's pure domain: a run's state is a fold of its events; `decide` says what next."""

from services.scheduler.domain.decide import Decision, child_run_id, decide, idempotency_key
from services.scheduler.domain.evolve import evolve
from services.scheduler.domain.state import RunState

__all__ = ["Decision", "RunState", "child_run_id", "decide", "evolve", "idempotency_key"]
