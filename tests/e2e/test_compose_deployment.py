"""The services started exactly as docker-compose.yml describes them run a workflow.

No container engine runs here, so the test reads the compose file and the Dockerfile and
starts each service the way a container would: the Dockerfile's command, the service's
environment after compose's `${VAR}` interpolation and nothing else (no stray `HEYM_*` from
the test's own environment), as many processes as its `deploy.replicas`, and NATS and Postgres
from the wheels in place of the images: the three NATS nodes run the compose file's own
`infra/nats-cluster.conf` (only ports, host names and the data directory changed for one
host) as one JetStream cluster, and the compose host names are pointed at the test's servers.
The admin is bootstrapped with the compose file's one-shot `admin` service, and the tool
sandbox is checked to hold neither the database URL nor the secret key.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
import yaml

from libs.devstack.status import health_replies
from libs.embedded import find_nats_server, wait_jetstream
from libs.embedded.process import free_port
from libs.secrets import generate_key
from libs.testing import infra
from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
_VAR = re.compile(r"\$\{([A-Z0-9_]+)(?::([?-])([^}]*))?\}")


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose's `${NAME}`, `${NAME:-default}` and `${NAME:?error}`."""

    def one(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if env.get(name):
            return env[name]
        if op == "?":
            raise AssertionError(f"compose refuses to start without {name}: {arg}")
        return arg if op == "-" else ""

    return _VAR.sub(one, value)


def container_command() -> list[str]:
    """The Dockerfile's CMD, as the image runs it."""
    found = re.search(r"^CMD (\[.*\])$", (ROOT / "Dockerfile").read_text(), re.M)
    assert found, "the Dockerfile has no CMD"
    argv: list[str] = yaml.safe_load(found.group(1))
    assert argv[:2] == ["sh", "-c"]
    return argv


def point_at(value: str, nats_urls: list[str], database_url: str) -> str:
    """Compose's host names resolve to the containers; here, to the test's servers."""
    for i, url in enumerate(nats_urls, start=1):
        value = value.replace(f"nats://nats-{i}:4222", url)
    return re.sub(r"postgresql://[^\s]*@postgres:5432/heym", database_url, value)


class ComposeNats:
    """The compose file's NATS nodes: its cluster configuration, its node names, on one host."""

    def __init__(self, compose: dict[str, Any], root: Path) -> None:
        self.names = sorted(n for n in compose["services"] if n.startswith("nats-"))
        self.root = root
        self.client = {n: free_port() for n in self.names}
        self.route = {n: free_port() for n in self.names}
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def urls(self) -> list[str]:
        return [f"nats://127.0.0.1:{self.client[n]}" for n in self.names]

    def config(self, compose: dict[str, Any], name: str) -> Path:
        (mount,) = [v for v in compose["services"][name]["volumes"] if v.endswith("nats.conf:ro")]
        text = (ROOT / mount.split(":")[0]).read_text()
        text = text.replace("port: 4222", f"port: {self.client[name]}")
        text = text.replace("http_port: 8222", f"http_port: {free_port()}")
        text = text.replace("port: 6222", f"port: {self.route[name]}")
        for other in self.names:
            text = text.replace(f"{other}:6222", f"127.0.0.1:{self.route[other]}")
        text = text.replace('store_dir: "/data"', f'store_dir: "{self.root / name}"')
        conf = self.root / f"{name}.conf"
        conf.write_text(f"host: 127.0.0.1\n{text}")
        return conf

    def launch(self, compose: dict[str, Any]) -> None:
        for name in self.names:
            env = {**os.environ, **compose["services"][name]["environment"]}
            log = (self.root / f"{name}.log").open("ab")
            self.procs.append(
                subprocess.Popen(
                    [find_nats_server(), "-c", str(self.config(compose, name))],
                    env=env,
                    stdout=log,
                    stderr=log,
                )
            )
            log.close()

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(20)


class Deployment:
    def __init__(self, compose: dict[str, Any], host_env: dict[str, str], log_dir: Path) -> None:
        self.compose = compose
        self.host_env = host_env
        self.log_dir = log_dir
        self.procs: dict[str, asyncio.subprocess.Process] = {}

    def environment(self, name: str, nats_urls: list[str], database_url: str) -> dict[str, str]:
        svc = self.compose["services"][name]
        env = {
            k: point_at(interpolate(str(v), self.host_env), nats_urls, database_url)
            for k, v in (svc.get("environment") or {}).items()
        }
        # what the image adds (Dockerfile ENV) and what any process needs to start
        env.update(
            HEYM_SERVICE=svc["build"]["args"]["SERVICE"],
            PYTHONUNBUFFERED="1",
            PATH=f"{BIN}:{os.environ.get('PATH', '')}",
            HOME=os.environ.get("HOME", "/tmp"),
        )
        return env

    async def start(self, name: str, env: dict[str, str]) -> None:
        argv = container_command()
        log = (self.log_dir / f"{name}.log").open("ab")
        try:
            self.procs[name] = await asyncio.create_subprocess_exec(
                *argv, env=env, cwd=ROOT, stdout=log, stderr=log
            )
        finally:
            log.close()

    async def one_shot(self, name: str, env: dict[str, str]) -> str:
        svc = self.compose["services"][name]
        command = svc["command"]
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        proc = await asyncio.create_subprocess_exec(
            *argv, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, out
        return out.decode()

    async def stop(self) -> None:
        for proc in self.procs.values():
            if proc.returncode is None:
                proc.terminate()
        for proc in self.procs.values():
            await asyncio.wait_for(proc.wait(), 20)


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with HttpTarget() as t:
        yield t


async def test_services_started_as_compose_describes_run_a_workflow(
    pg_admin_url: str,
    pg_template: str,
    tmp_path: Path,
    target: HttpTarget,
) -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = [
        name
        for name, svc in compose["services"].items()
        if "build" in svc and not svc.get("profiles")
    ]
    assert sorted(services) == ["agent_runtime", "gateway", "review", "scheduler", "tool_sandbox"]
    port = free_port()
    deployment = Deployment(compose, {"HEYM_SECRET_KEY": generate_key()}, tmp_path)
    # NATS of its own (the compose file's three-node cluster): a deployment's durable consumers
    # must not share the e2e system's (same names, same stream) or they would take its work.
    cluster = ComposeNats(compose, tmp_path)
    assert cluster.names == ["nats-1", "nats-2", "nats-3"]
    try:
        cluster.launch(compose)
        await wait_jetstream(cluster.urls, 60)
        await _run(
            deployment, compose, services, port, cluster.urls, pg_admin_url, pg_template, target
        )
    finally:
        cluster.stop()


async def _run(
    deployment: Deployment,
    compose: dict[str, Any],
    services: list[str],
    port: int,
    nats_urls: list[str],
    pg_admin_url: str,
    pg_template: str,
    target: HttpTarget,
) -> None:
    async with infra.fresh_database(pg_admin_url, pg_template) as database_url:
        envs = {name: deployment.environment(name, nats_urls, database_url) for name in services}
        envs["gateway"]["HEYM_HTTP_PORT"] = str(port)  # the container's 8000, on a free port
        # the one-shot admin bootstrap, as `docker compose run --rm admin`
        printed = await deployment.one_shot(
            "admin", deployment.environment("admin", nats_urls, database_url)
        )
        key = printed.strip().splitlines()[-1]
        assert key.startswith("heym_"), printed
        replicas = {
            name: int((compose["services"][name].get("deploy") or {}).get("replicas", 1))
            for name in services
        }
        assert replicas["scheduler"] == 3
        assert replicas["agent_runtime"] == 2
        try:
            for name in services:
                for i in range(1, replicas[name] + 1):
                    await deployment.start(name if i == 1 else f"{name}#{i}", envs[name])
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base, headers={"X-MCP-Key": key}) as c:

                async def healthy() -> bool:
                    try:
                        r = await c.get("/api/health")
                    except httpx.HTTPError as exc:
                        raise AssertionError(f"gateway not up: {exc!r}") from None
                    assert r.status_code == 200, r.text
                    states = {n: s["state"] for n, s in r.json()["services"].items()}
                    assert set(states.values()) == {"healthy"}, states
                    return True

                await eventually(healthy, timeout=60, interval=0.2)
                token = uuid.uuid4().hex
                r = await c.post(
                    "/api/workflows",
                    json={
                        "name": "compose",
                        "nodes": [
                            {"id": "in", "type": "textInput", "data": {"label": "req"}},
                            {
                                "id": "h",
                                "type": "http",
                                "data": {
                                    "label": "call",
                                    "curl": f"curl {target.url}/count/{token}",
                                },
                            },
                            {
                                "id": "o",
                                "type": "output",
                                "data": {"label": "out", "message": "$req.text $call.body.count"},
                            },
                        ],
                        "edges": [
                            {"id": "e1", "source": "in", "target": "h"},
                            {"id": "e2", "source": "h", "target": "o"},
                        ],
                    },
                )
                assert r.status_code == 201, r.text
                run = await c.post(f"/api/workflows/{r.json()['id']}/execute", json={"text": "ran"})
                assert run.status_code == 200, run.text
                assert run.json() == {"out": {"result": "ran 1"}}
            # every replica is up, on the replicated run stream
            nc = await nats.connect(servers=nats_urls)
            try:
                for name in services:
                    found = await health_replies(nc, name, wait_s=1.0)
                    assert len(found) == replicas[name], (name, found)
                info = await nc.jetstream().stream_info("HEYM_RUNS")
                assert info.config.num_replicas == 3
            finally:
                await nc.close()
            # least privilege, checked on the running processes
            sandbox = _environ(deployment.procs["tool_sandbox"].pid)
            assert "HEYM_DATABASE_URL" not in sandbox
            assert "HEYM_SECRET_KEY" not in sandbox
            assert "HEYM_SECRET_KEY" not in _environ(deployment.procs["review"].pid)
            assert "HEYM_SECRET_KEY" in _environ(deployment.procs["gateway"].pid)
        finally:
            await deployment.stop()


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = [item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item]
    return {k.decode(): v.decode(errors="replace") for k, v in pairs}
