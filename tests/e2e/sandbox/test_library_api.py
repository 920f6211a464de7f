"""The gateway's skills library, generated files and MCP connections, as users see them:
hostile uploads refused, header values never returned, nothing visible to another user."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest

from libs.eventlog import EventLog
from libs.testing.eventually import eventually
from tests.e2e.sandbox.items import dispatch, results
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


def zip_of(entries: dict[str, str], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, text in entries.items():
            z.writestr(path, text)
        if symlink is not None:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/etc/passwd")
    return buf.getvalue()


async def test_skills_are_uploaded_as_md_or_zip_and_belong_to_their_owner(system: System) -> None:
    _, key = await system.new_user()
    _, other = await system.new_user()
    async with system.client(key) as c:
        md = await c.post(
            "/api/skills",
            files={"file": ("tone.md", b"---\nname: Polite Tone\n---\nAlways say please.")},
        )
        assert md.status_code == 201, md.text
        assert md.json()["name"] == "Polite Tone"
        archive = zip_of(
            {
                "calc/SKILL.md": "Use the calculator.",
                "calc/main.py": "from helper import twice\nprint(twice(21))",
                "calc/helper.py": "def twice(x):\n    return x * 2",
            }
        )
        z = await c.post("/api/skills", files={"file": ("calc.zip", archive)})
        assert z.status_code == 201, z.text
        body = z.json()
        assert body["content"] == "Use the calculator."
        assert sorted(body["file_paths"]) == ["helper.py", "main.py"]
        listed = (await c.get("/api/skills")).json()
        assert {s["name"] for s in listed} == {"Polite Tone", "calc"}
        one = (await c.get(f"/api/skills/{body['id']}")).json()
        assert {f["path"] for f in one["files"]} == {"helper.py", "main.py"}
    async with system.client(other) as c:
        assert (await c.get("/api/skills")).json() == []
        assert (await c.get(f"/api/skills/{body['id']}")).status_code == 404
        assert (await c.delete(f"/api/skills/{body['id']}")).status_code == 404
    async with system.client(key) as c:
        assert (await c.delete(f"/api/skills/{body['id']}")).status_code == 204
        assert (await c.get(f"/api/skills/{body['id']}")).status_code == 404


@pytest.mark.parametrize(
    ("archive", "reason"),
    [
        (zip_of({"main.py": "print(1)", "../../x": "pwned"}), "leaves the skill's folder"),
        (zip_of({"/etc/cron.d/x": "pwned"}), "leaves the skill's folder"),
        (zip_of({"main.py": "print(1)"}, symlink="link"), "symlink"),
        (b"PK\x03\x04 not really a zip", "not a valid zip file"),
    ],
)
async def test_hostile_zips_are_refused_at_upload(
    system: System, archive: bytes, reason: str
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        r = await c.post("/api/skills", files={"file": ("evil.zip", archive)})
        assert r.status_code == 400, r.text
        assert reason in r.json()["detail"]
        assert (await c.get("/api/skills")).json() == []


async def test_mcp_connection_headers_are_never_returned_nor_visible_to_others(
    system: System,
) -> None:
    _, key = await system.new_user()
    _, other = await system.new_user()
    secret = "Bearer very-secret-token-123456"
    async with system.client(key) as c:
        r = await c.post(
            "/api/mcp/connections",
            json={
                "label": "remote",
                "transport": "streamable_http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": secret},
                "env": {"API_KEY": "env-secret-999"},
            },
        )
        assert r.status_code == 201, r.text
        cid = r.json()["id"]
        assert r.json()["header_names"] == ["Authorization"]
        for resp in (
            r,
            await c.get("/api/mcp/connections"),
            await c.get(f"/api/mcp/connections/{cid}"),
            await c.put(f"/api/mcp/connections/{cid}", json={"label": "renamed"}),
        ):
            assert resp.status_code in (200, 201), resp.text
            assert "very-secret-token" not in resp.text
            assert "env-secret-999" not in resp.text
        assert (await c.get(f"/api/mcp/connections/{cid}")).json()["label"] == "renamed"
        bad = await c.post("/api/mcp/connections", json={"label": "x", "transport": "ws"})
        assert bad.status_code == 422
    async with system.client(other) as c:
        assert (await c.get("/api/mcp/connections")).json() == []
        assert (await c.get(f"/api/mcp/connections/{cid}")).status_code == 404
        assert (await c.post(f"/api/mcp/connections/{cid}/tools")).status_code == 404
        assert (await c.delete(f"/api/mcp/connections/{cid}")).status_code == 404


async def test_a_skill_file_is_served_by_its_link_and_only_with_its_token(
    system: System, event_log: EventLog, run_id: str
) -> None:
    owner, key = await system.new_user()
    code = (
        "import os, json\n"
        "path = os.path.join(os.environ['_OUTPUT_DIR'], 'report.csv')\n"
        "open(path, 'w').write('a,b\\n1,2\\n')\n"
        "open(os.path.join(os.environ['_OUTPUT_DIR'], '_hidden.txt'), 'w').write('no')\n"
        "print(json.dumps({'file': path}))"
    )
    ev = await dispatch(
        event_log,
        run_id,
        source="skill",
        name="skill_report",
        arguments={"input": "go"},
        meta={"skill": {"name": "Report", "files": [{"path": "main.py", "content": code}]}},
        owner_id=owner,
    )
    (recorded,) = await eventually(lambda: results(event_log, run_id, ev), timeout=30)
    assert recorded.status == "success", recorded.result
    (generated,) = recorded.result["_generated_files"]
    assert generated["filename"] == "report.csv"
    assert generated["mime_type"] == "text/csv"
    assert generated["size_bytes"] == 8
    url = generated["download_url"]
    assert recorded.result["file"] == url  # the path in the result names the link
    async with system.client() as anonymous:
        got = await anonymous.get(url)
        assert got.status_code == 200
        assert got.content == b"a,b\n1,2\n"
        base = url.split("?")[0]
        assert (await anonymous.get(base)).status_code == 404
        assert (await anonymous.get(base + "?token=wrong")).status_code == 404
    async with system.client(key) as c:  # even the owner needs the token
        assert (await c.get(base)).status_code == 404
