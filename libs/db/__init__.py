"""Postgres access: connection pools and the versioned SQL migrations applied at start."""

from libs.db.migrations import MigrationError, applied_versions, apply_migrations
from libs.db.pool import create_pool

__all__ = ["MigrationError", "applied_versions", "apply_migrations", "create_pool"]
