"""The offline demo model: with no model credential configured, `heym up` starts the scripted
model server and gives the admin a credential for it, so agent and llm nodes run offline."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from libs.accounts import ADMIN_EMAIL
from libs.db.types import Conn
from libs.devstack.children import Child
from libs.embedded.process import free_port
from libs.secrets import SecretBox
from libs.secrets.credentials import credential_aad, key_hint

DEMO_CREDENTIAL = "Offline demo model"
DEMO_KEY = "demo-key-not-a-secret"


async def needs_demo_model(conn: Conn) -> bool:
    """True when the admin has no model credential of their own."""
    count = await conn.fetchval(
        """SELECT count(*) FROM credentials c JOIN users u ON u.id = c.owner_id
           WHERE u.email = $1 AND c.name <> $2""",
        ADMIN_EMAIL,
        DEMO_CREDENTIAL,
    )
    return int(count or 0) == 0


async def start_demo_model(env: dict[str, str], log_dir: Path) -> tuple[Child, str]:
    port = free_port()
    child = Child(
        "model-server",
        env,
        log_dir,
        argv=["-m", "libs.testing.model_server", "--port", str(port)],
    )
    await child.start()
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(200):
        if "listening on" in child.log_tail(5):
            break
        await asyncio.sleep(0.05)
    return child, url


async def ensure_demo_credential(conn: Conn, box: SecretBox, base_url: str) -> str:
    admin = await conn.fetchval("SELECT id FROM users WHERE email = $1", ADMIN_EMAIL)
    found = await conn.fetchval(
        "SELECT id FROM credentials WHERE owner_id = $1 AND name = $2", admin, DEMO_CREDENTIAL
    )
    if found is not None:
        await conn.execute(
            "UPDATE credentials SET base_url = $2, updated_at = now() WHERE id = $1",
            found,
            base_url,
        )
        return str(found)
    cid = uuid.uuid4()
    await conn.execute(
        """INSERT INTO credentials (id, owner_id, name, type, base_url, secret, key_hint)
           VALUES ($1, $2, $3, 'custom', $4, $5, $6)""",
        cid,
        admin,
        DEMO_CREDENTIAL,
        base_url,
        box.encrypt(DEMO_KEY, aad=credential_aad(cid)),
        key_hint(DEMO_KEY),
    )
    return str(cid)
