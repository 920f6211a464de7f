"""A whole deployment on this machine that can be killed piece by piece: a NATS cluster (or one
server), Postgres, every service with replicas, the HTTP test server and the scripted model.

`kill(name)` is kill -9 of one process: a service replica (`scheduler#2`), a nats-server
(`nats-2`) or Postgres (`postgres`); `restart(name)` starts it again on the same ports and data.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import nats

from libs.db import apply_migrations
from libs.embedded import EmbeddedNats, EmbeddedNatsCluster, EmbeddedPostgres, wait_jetstream
from libs.testing import infra
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import ModelServer
from tests.chaos.workload import model_script
from tests.e2e.system import System

SERVICES_ENV = {
    "HEYM_EXECUTE_TIMEOUT_S": "60",
    "HEYM_MODEL_TIMEOUT_S": "10",
    "HEYM_REDELIVERY_BACKOFF_S": "0.2",
    "HEYM_SWEEP_INTERVAL_S": "2",
    "HEYM_SWEEP_QUIET_S": "10",
    "HEYM_PARTITION_ACK_WAIT_S": "5",
    "HEYM_SHUTDOWN_GRACE_S": "3",
}


@dataclass
class Deployment:
    system: System
    target: HttpTarget
    model: ModelServer
    postgres: EmbeddedPostgres
    cluster: EmbeddedNatsCluster | None
    single: EmbeddedNats | None
    root: Path
    template: str

    @property
    def nats_nodes(self) -> list[str]:
        if self.cluster is None:
            return []
        return [f"nats-{i + 1}" for i in range(len(self.cluster.nodes))]

    @property
    def processes(self) -> list[str]:
        """Everything the chaos schedule may kill."""
        return [*self.system.children, *self.nats_nodes, "postgres"]

    def _node(self, name: str) -> EmbeddedNats:
        assert self.cluster is not None
        return self.cluster.nodes[int(name.split("-")[1]) - 1]

    async def kill(self, name: str) -> None:
        if name.startswith("nats-"):
            await asyncio.to_thread(self._node(name).kill)
        elif name == "postgres":
            pid = self.postgres.pid
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                await asyncio.sleep(0.2)
        else:
            await self.system.kill(name)

    async def restart(self, name: str) -> None:
        if name.startswith("nats-"):
            await asyncio.to_thread(self._node(name).start)
            assert self.cluster is not None
            await wait_jetstream(self.cluster.urls, 60)
        elif name == "postgres":
            await asyncio.to_thread(self.postgres.restart_after_crash)
        else:
            await self.system.restart(name)

    async def stream_leader(self) -> str:
        """The node (`nats-<i>`) leading the run stream's Raft group."""
        nc = await nats.connect(servers=self.system.nats_url.split(","))
        try:
            reply = await nc.request("$JS.API.STREAM.INFO.HEYM_RUNS", b"", timeout=5)
            leader = str(json.loads(reply.data)["cluster"]["leader"])
        finally:
            await nc.close()
        return "nats-" + leader.rsplit("-", 1)[1]


@contextlib.asynccontextmanager
async def deployment(
    *, replicas: dict[str, int], cluster: int = 0, **env: str
) -> AsyncIterator[Deployment]:
    """Start it all (`cluster` nats-servers as a JetStream cluster with R3, else one server)."""
    with tempfile.TemporaryDirectory(prefix="heym-chaos-") as d:
        root = Path(d)
        nats_cluster: EmbeddedNatsCluster | None = None
        single: EmbeddedNats | None = None
        stream_replicas = "1"
        if cluster:
            nats_cluster = EmbeddedNatsCluster(root / "nats", cluster)
            await asyncio.to_thread(nats_cluster.start)
            url = nats_cluster.url
            stream_replicas = str(min(3, cluster))
        else:
            single = EmbeddedNats(root / "nats")
            single.start()
            url = single.url
        pg = EmbeddedPostgres(root / "pg")
        db_url = await asyncio.to_thread(pg.start)
        conn = await asyncpg.connect(db_url)
        await apply_migrations(conn)
        await conn.close()
        template = await infra.create_template(pg.admin_url, "chaos_template")
        settings = {**SERVICES_ENV, "HEYM_STREAM_REPLICAS": stream_replicas, **env}
        system = System(url, db_url, root / "logs", **settings)
        model = ModelServer(model_script()).start()
        target = await HttpTarget().start()
        try:
            await system.start(replicas=replicas)
            yield Deployment(system, target, model, pg, nats_cluster, single, root, template)
        finally:
            with contextlib.suppress(Exception):
                await system.stop()
            await target.close()
            model.stop()
            pg.stop()
            if nats_cluster is not None:
                nats_cluster.stop()
            if single is not None:
                single.stop()
