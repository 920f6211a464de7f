"""Global variables (`$global`): read a user's as a run's snapshot, and the projection's upsert."""

from __future__ import annotations

import uuid
from typing import Any, Final

import asyncpg

from libs.db.types import Conn

# Upserts the `isGlobal` variable results of one finished run (the last value of each name
# wins; a value recorded earlier in the log never overwrites a later one).
PERSIST_RUN_GLOBALS: Final = """
    INSERT INTO global_variables (id, owner_id, name, value, source_sequence, updated_at)
    SELECT gen_random_uuid(), u.id, n.output->>'name', n.output->'value', n.sequence, now()
    FROM (SELECT DISTINCT ON (output->>'name') output, sequence FROM run_nodes
          WHERE run_id = $1 AND node_type = 'variable' AND status = 'success'
            AND metadata->>'global' = 'true' AND output ? 'name'
          ORDER BY output->>'name', sequence DESC) AS n
    JOIN runs r ON r.run_id = $1
    -- a run whose owner no longer exists persists nothing (and never stalls the projection)
    JOIN users u ON u.id::text = r.owner_id
    ON CONFLICT (owner_id, name) DO UPDATE SET
        value = EXCLUDED.value, source_sequence = EXCLUDED.source_sequence, updated_at = now()
    WHERE global_variables.source_sequence <= EXCLUDED.source_sequence"""


async def global_values(conn: Conn | asyncpg.Pool[Any], owner_id: str) -> dict[str, Any]:
    """A user's global variables by name (what a run starting now reads as `$global`)."""
    try:
        oid = uuid.UUID(owner_id)
    except ValueError:
        return {}
    rows = await conn.fetch(
        "SELECT name, value FROM global_variables WHERE owner_id = $1 ORDER BY name", oid
    )
    return {r["name"]: r["value"] for r in rows}
