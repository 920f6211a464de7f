"""The users API: administrators create users and issue and revoke keys, no database needed."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from libs.devstack.children import Child
from libs.embedded.process import free_port
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@contextlib.asynccontextmanager
async def second_gateway(system: System) -> AsyncIterator[str]:
    """Another gateway replica on its own port, against the same NATS and Postgres."""
    port = free_port()
    child = Child("gateway", {**system.env, "HEYM_HTTP_PORT": str(port)}, system.log_dir / "gw2")
    await child.start()
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url) as c:
            for _ in range(400):
                with contextlib.suppress(httpx.HTTPError):
                    if (await c.get("/schema/openapi.json")).status_code == 200:
                        break
                await asyncio.sleep(0.05)
        yield url
    finally:
        await child.stop(10)


async def test_an_administrator_manages_users_and_keys(system: System) -> None:
    _, admin_key = await system.new_user(is_admin=True)
    _, plain_key = await system.new_user()
    email = f"new-{uuid.uuid4().hex[:8]}@test.local"
    async with system.client(admin_key) as admin, system.client(plain_key) as plain:
        assert (await plain.post("/api/users", json={"email": "x@y.z"})).status_code == 403
        assert (await plain.get("/api/users")).status_code == 403
        r = await admin.post("/api/users", json={"email": email, "name": "New"})
        assert r.status_code == 201, r.text
        user = r.json()
        assert (user["email"], user["is_admin"]) == (email, False)
        assert (await admin.post("/api/users", json={"email": email})).status_code == 409
        assert (await admin.post("/api/users", json={"email": "nope"})).status_code == 422
        r = await admin.post(f"/api/users/{user['id']}/api-keys", json={"name": "ci"})
        assert r.status_code == 201, r.text
        issued = r.json()
        key = issued["api_key"]
        assert key.startswith("heym_")
        assert issued["key_prefix"] == key[:9]
        listed = (await admin.get(f"/api/users/{user['id']}/api-keys")).json()
        assert [k["id"] for k in listed] == [issued["id"]]
        assert key not in str(listed)  # shown once, never again
        assert (await admin.get(f"/api/users/{uuid.uuid4()}/api-keys")).status_code == 404
    async with system.client(key) as new_user:
        assert (await new_user.get("/api/workflows")).json() == []


async def test_a_revoked_key_stops_working_at_once_on_every_gateway(system: System) -> None:
    _, admin_key = await system.new_user(is_admin=True)
    async with system.client(admin_key) as admin:
        user = (
            await admin.post("/api/users", json={"email": f"r-{uuid.uuid4().hex[:8]}@t.local"})
        ).json()
        issued = (await admin.post(f"/api/users/{user['id']}/api-keys", json={})).json()
    headers = {"X-MCP-Key": issued["api_key"]}
    async with (
        second_gateway(system) as other_url,
        httpx.AsyncClient(base_url=system.base_url, headers=headers) as here,
        httpx.AsyncClient(base_url=other_url, headers=headers) as there,
    ):
        assert (await here.get("/api/workflows")).status_code == 200
        assert (await there.get("/api/workflows")).status_code == 200
        async with system.client(admin_key) as admin:
            r = await admin.delete(f"/api/users/{user['id']}/api-keys/{issued['id']}")
            assert r.status_code == 204
        # The very next request on either replica is refused.
        assert (await there.get("/api/workflows")).status_code == 401
        assert (await here.get("/api/workflows")).status_code == 401
