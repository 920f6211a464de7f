"""`heym admin create`: the one-shot bootstrap of a deployment's administrator.

Applies the migrations, makes sure the admin user exists and issues an API key for it,
printed once (only its hash is stored). With `HEYM_ADMIN_API_KEY` set, that key is made
valid instead of a new one being generated.
"""

from __future__ import annotations

import asyncpg

from libs.accounts.api_keys import ADMIN_EMAIL, add_api_key, ensure_admin, generate_api_key
from libs.config import Settings
from libs.db import apply_migrations
from libs.db.pool import init_connection


async def create_admin(settings: Settings) -> tuple[str, str | None]:
    """The admin's email and a new API key (None when the configured key was used)."""
    conn = await asyncpg.connect(settings.require_database())
    try:
        await init_connection(conn)
        await apply_migrations(conn)
        key = await ensure_admin(conn, settings.admin_api_key)
        if key is None and settings.admin_api_key is None:
            # the admin existed already: issue another key rather than print nothing usable
            row = await conn.fetchrow("SELECT id FROM users WHERE email = $1", ADMIN_EMAIL)
            assert row is not None
            key = generate_api_key()
            await add_api_key(conn, str(row["id"]), key, name="heym admin create")
        return ADMIN_EMAIL, key
    finally:
        await conn.close()
