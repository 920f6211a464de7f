"""Projections: durable consumers that fold run events into Postgres read models, exactly once."""

from libs.projection.runner import ProjectionRunner, Projector, projection_position

__all__ = ["ProjectionRunner", "Projector", "StatementBatch", "projection_position"]
