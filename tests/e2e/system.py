"""The five services as real processes against the test session's NATS and Postgres.

One system serves many tests (as one deployment serves many users); tests isolate by their
own user, API key and workflows. A test may kill -9 or restart a service.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import nats
import nats.js.errors

from contracts import subjects
from contracts.base import Envelope
from libs.accounts.api_keys import add_api_key, create_user, generate_api_key
from libs.config import service_env
from libs.devstack.children import Child
from libs.embedded.process import free_port
from libs.eventlog import EventLog
from libs.eventlog.feeds import FeedSpec
from libs.secrets import generate_key

PARTITIONS = 16  # HEYM_PARTITIONS' default


class System:
    def __init__(self, nats_url: str, database_url: str, log_dir: Path, **env: str) -> None:
        self.nats_url = nats_url
        self.database_url = database_url
        self.http_port = free_port()
        self.base_url = f"http://127.0.0.1:{self.http_port}"
        self.log_dir = log_dir
        base = {k: v for k, v in os.environ.items() if not k.startswith("HEYM_")}
        base.update(
            HEYM_NATS_URL=nats_url,
            HEYM_DATABASE_URL=database_url,
            HEYM_HTTP_PORT=str(self.http_port),
            HEYM_SHUTDOWN_GRACE_S="5",
            HEYM_SECRET_KEY=generate_key(),
            PYTHONUNBUFFERED="1",
        )
        base.update(env)
        self.env = base
        self.children: dict[str, Child] = {}

    async def start(
        self, names: tuple[str, ...] = subjects.SERVICES, *, replicas: dict[str, int] | None = None
    ) -> None:
        """Start each service; `replicas` runs more processes of some (named `scheduler#2`...)."""
        for name in names:
            for i in range(1, (replicas or {}).get(name, 1) + 1):
                key = name if i == 1 else f"{name}#{i}"
                # each service gets only the settings it needs, as in a deployment
                env = service_env(name, self.env)
                child = Child(key, env, self.log_dir, argv=["-m", f"services.{name}"])
                await child.start()
                self.children[key] = child
        await self.wait_healthy(tuple(self.children))

    async def wait_healthy(
        self, names: tuple[str, ...] = subjects.SERVICES, timeout: float = 60
    ) -> None:
        nc = await nats.connect(servers=self.nats_url.split(","))
        try:
            deadline = time.monotonic() + timeout
            pending = set(names)
            while pending:
                for name in list(pending):
                    child = self.children[name]
                    if child.process is not None and child.process.returncode is not None:
                        raise RuntimeError(f"{name} exited:\n{child.log_tail(30)}")
                    with contextlib.suppress(Exception):
                        # Every replica answers for its service; the pid tells which one it is.
                        service = name.split("#")[0]
                        if await _healthy_pid(nc, service, None if name == service else child.pid):
                            pending.discard(name)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not healthy: {pending}")
                if pending:
                    await asyncio.sleep(0.05)
        finally:
            await nc.close()
        if "gateway" in names:
            async with httpx.AsyncClient() as client:
                for _ in range(200):
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get(f"{self.base_url}/api/health")).status_code in (
                            200,
                            503,
                        ):
                            return
                    await asyncio.sleep(0.05)

    async def kill(self, name: str) -> None:
        child = self.children[name]
        assert child.process is not None
        os.kill(child.process.pid, signal.SIGKILL)
        await child.process.wait()

    async def restart(self, name: str) -> None:
        await self.children[name].start()
        await self.wait_healthy((name,))

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop(10) for c in self.children.values()))

    async def new_user(
        self, email: str | None = None, *, is_admin: bool = False
    ) -> tuple[str, str]:
        """A user of its own and its API key: tests isolate by user."""
        conn = await asyncpg.connect(self.database_url)
        try:
            user = await create_user(
                conn, email=email or f"u{time.time_ns()}@test.local", is_admin=is_admin
            )
            key = generate_api_key()
            await add_api_key(conn, user.id, key)
            return user.id, key
        finally:
            await conn.close()

    async def events(self, run_id: str) -> list[Envelope]:
        """Everything recorded for one run (its decisions, results, agent turns, work items)."""
        nc = await nats.connect(servers=self.nats_url.split(","))
        try:
            return await EventLog(nc).read(subjects.run_everything(run_id))
        finally:
            await nc.close()

    async def ack_pending(self, *durables: str) -> dict[str, int]:
        """Messages delivered to a consumer and not acknowledged yet (work held by a process)."""
        nc = await nats.connect(servers=self.nats_url.split(","))
        try:
            js = nc.jetstream()
            found = {}
            for d in durables:
                try:
                    found[d] = (await js.consumer_info(subjects.RUN_STREAM, d)).num_ack_pending
                except nats.js.errors.NotFoundError:
                    # a run-partitioned consumer: one consumer per partition on its feed
                    spec = FeedSpec(d, subjects.RUN_KEYED, PARTITIONS)
                    found[d] = 0
                    for p in range(PARTITIONS):
                        info = await js.consumer_info(spec.stream, spec.consumer(p))
                        found[d] += info.num_ack_pending
            return found
        finally:
            await nc.close()

    def client(self, key: str | None = None, **kwargs: Any) -> httpx.AsyncClient:
        headers = {"X-MCP-Key": key} if key else {}
        return httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=60, **kwargs)


async def _healthy_pid(nc: nats.NATS, service: str, pid: int | None) -> bool:
    """Whether `service` (or, with `pid`, that replica of it) answers healthy."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    try:
        await nc.publish(subjects.health(service), b"", reply=inbox)
        deadline = time.monotonic() + 0.5
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await sub.next_msg(timeout=left)
            except nats.errors.TimeoutError:
                return False
            if b'"healthy"' in msg.data and (pid is None or f'"pid":{pid},'.encode() in msg.data):
                return True
        return False
    finally:
        await sub.unsubscribe()


def python() -> str:
    return sys.executable
