"""Inspector sign-in: the session cookie's flags, sessions stored hashed and shared by
gateway replicas, sign-out, revoked keys, CSRF on every form, and another user's data
answering 404."""

from __future__ import annotations

import hashlib

import asyncpg
import pytest

from tests.e2e.agents.helpers import create, n
from tests.e2e.inspector.helpers import browser_client, csrf_of, sign_in
from tests.e2e.system import System
from tests.e2e.workflows.test_users_api import second_gateway

pytestmark = pytest.mark.e2e

HELLO = (
    [
        n("in", "textInput", "userInput"),
        n("s", "set", "greet", mappings=[{"key": "msg", "value": "Hello $userInput.text"}]),
        n("o", "output", "result", message="$greet.msg"),
    ],
    [{"id": "e1", "source": "in", "target": "s"}, {"id": "e2", "source": "s", "target": "o"}],
)


async def _run(system: System, key: str) -> tuple[str, str]:
    async with system.client(key) as c:
        wid = await create(c, *HELLO)
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "Ada"},
            headers={"X-Simple-Response": "false"},
        )
        assert r.status_code == 200, r.text
        return wid, r.json()["execution_history_id"]


async def test_sign_in_sets_a_strict_expiring_cookie_and_sign_out_ends_the_session(
    system: System,
) -> None:
    _, key = await system.new_user()
    async with browser_client(system) as c:
        assert (await c.get("/ui/history")).status_code == 303  # not signed in yet
        r = await sign_in(c, key)
        assert r.status_code == 303, r.text
        assert r.headers["location"] == "/ui/history"
        cookie = next(v for v in r.headers.get_list("set-cookie") if v.startswith("heym_session="))
        flags = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
        assert {"httponly", "max-age", "path"} <= flags
        assert "samesite=strict" in cookie.lower()
        assert "path=/ui" in cookie.lower()
        assert "secure" not in flags  # plain HTTP here; see the HTTPS test
        token = cookie.split(";")[0].split("=", 1)[1]
        page = await c.get("/ui/history")
        assert page.status_code == 200
        assert "Execution history" in page.text
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "script-src 'self'" in csp
        assert "unsafe" not in csp

        # stored hashed: the token itself is nowhere in the table
        conn = await asyncpg.connect(system.database_url)
        try:
            stored = await conn.fetch("SELECT token_hash FROM ui_sessions")
        finally:
            await conn.close()
        hashes = {bytes(r["token_hash"]) for r in stored}
        assert hashlib.sha256(token.encode()).digest() in hashes
        assert token.encode() not in hashes

        # another gateway replica knows the session (it is in Postgres, not in memory)
        async with (
            second_gateway(system) as other_url,
            browser_client(system, other_url) as there,
        ):
            there.cookies.set("heym_session", token, path="/ui")
            assert (await there.get("/ui/history")).status_code == 200

        out = await c.post("/ui/signout", data={"csrf": csrf_of(page.text)})
        assert out.status_code == 303
        assert (await c.get("/ui/history")).status_code == 303
    async with browser_client(system) as stale:
        stale.cookies.set("heym_session", token, path="/ui")
        assert (await stale.get("/ui/history")).status_code == 303  # ended for everyone


async def test_over_https_the_cookie_is_secure(system: System) -> None:
    _, key = await system.new_user()
    async with browser_client(system) as c:
        # uvicorn trusts X-Forwarded-Proto from a local proxy (forwarded_allow_ips)
        c.headers["X-Forwarded-Proto"] = "https"
        form = await c.get("/ui/signin")
        nonce = form.headers["set-cookie"]
        assert "secure" in {p.strip().lower() for p in nonce.split(";")}
        # httpx keeps Secure cookies for https only: send the nonce as the browser would
        r = await c.post(
            "/ui/signin",
            data={"csrf": csrf_of(form.text), "api_key": key},
            headers={"Cookie": nonce.split(";")[0]},
        )
        assert r.status_code == 303, r.text
        cookie = next(v for v in r.headers.get_list("set-cookie") if v.startswith("heym_session="))
        assert "secure" in {p.strip().lower() for p in cookie.split(";")}


async def test_a_wrong_key_and_a_revoked_key_do_not_sign_in(system: System) -> None:
    user_id, key = await system.new_user()
    async with browser_client(system) as c:
        r = await sign_in(c, "heym_not-a-real-key")
        assert r.status_code == 401
        assert "not valid" in r.text
        assert "heym_session=" not in str(r.headers.get_list("set-cookie"))
        assert (await sign_in(c, key)).status_code == 303
        assert (await c.get("/ui/history")).status_code == 200
        conn = await asyncpg.connect(system.database_url)
        try:
            await conn.execute(
                "UPDATE api_keys SET revoked_at = now() WHERE user_id = $1::uuid", user_id
            )
        finally:
            await conn.close()
        # the session opened with that key ends with it
        assert (await c.get("/ui/history")).status_code == 303


async def test_forms_without_the_csrf_token_are_refused(system: System) -> None:
    _, key = await system.new_user()
    async with browser_client(system) as c:
        form = await c.get("/ui/signin")
        r = await c.post("/ui/signin", data={"api_key": key})
        assert r.status_code == 403, r.text
        assert "heym_session=" not in str(r.headers.get_list("set-cookie"))
        r = await c.post("/ui/signin", data={"api_key": key, "csrf": "0" * 64})
        assert r.status_code == 403
        # another site's page posting the right token is refused too
        r = await c.post(
            "/ui/signin",
            data={"api_key": key, "csrf": csrf_of(form.text)},
            headers={"Origin": "https://evil.example"},
        )
        assert r.status_code == 403
        assert (await sign_in(c, key)).status_code == 303

        page = await c.get("/ui/history")
        r = await c.post("/ui/signout", data={})
        assert r.status_code == 403
        assert (await c.get("/ui/history")).status_code == 200  # still signed in
        r = await c.post("/ui/signout", data={"csrf": csrf_of(page.text) + "x"})
        assert r.status_code == 403
        assert (await c.get("/ui/history")).status_code == 200


async def test_another_users_run_workflow_and_trace_answer_404(system: System) -> None:
    _, owner_key = await system.new_user()
    _, other_key = await system.new_user()
    wid, run_id = await _run(system, owner_key)
    async with browser_client(system) as owner, browser_client(system) as other:
        await sign_in(owner, owner_key)
        await sign_in(other, other_key)
        page = await owner.get(f"/ui/runs/{run_id}")
        assert page.status_code == 200
        assert run_id in page.text
        assert (await owner.get(f"/ui/workflows/{wid}/history")).status_code == 200
        for path in (
            f"/ui/runs/{run_id}",
            f"/ui/runs/{run_id}/live",
            f"/ui/workflows/{wid}/history",
            "/ui/runs/0123456789abcdef",
            "/ui/traces/nope",
        ):
            r = await other.get(path)
            assert r.status_code == 404, (path, r.status_code)
            assert run_id not in r.text
        listing = await other.get("/ui/history")
        assert run_id not in listing.text
        cancel = await other.post(f"/ui/runs/{run_id}/cancel", data={"csrf": csrf_of(listing.text)})
        assert cancel.status_code == 404


async def test_pages_without_a_session_go_to_the_sign_in_form(system: System) -> None:
    async with browser_client(system) as c:
        r = await c.get("/ui/runs/abc?x=1")
        assert r.status_code == 303
        assert r.headers["location"].startswith("/ui/signin?next=%2Fui%2Fruns%2Fabc")
        assert (await c.get("/ui/runs/abc/live")).status_code == 401
        # no open redirect through `next`
        _, key = await system.new_user()
        form = await c.get("/ui/signin?next=//evil.example/")
        r = await c.post(
            "/ui/signin",
            data={"csrf": csrf_of(form.text), "api_key": key, "next": "https://evil.example/"},
        )
        assert r.headers["location"] == "/ui/history"
