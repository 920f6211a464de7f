"""Several embedded nats-servers as one JetStream cluster (routes between them, R3 streams).

Every node is a full server with `sync_interval: always`, so an append acknowledged by the
cluster is on the disks of a majority of nodes. Nodes can be killed and restarted one by one
(the chaos suite, the cluster tests); a restarted node catches up from its peers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import nats
import nats.errors

from libs.embedded.nats_server import EmbeddedNats, Routes
from libs.embedded.process import free_port


class EmbeddedNatsCluster:
    def __init__(
        self,
        store_dir: Path,
        size: int = 3,
        *,
        ports: list[int] | None = None,
        host: str = "127.0.0.1",
        max_payload: int = 8 * 1024 * 1024,
    ) -> None:
        if size < 1:
            raise ValueError("a cluster has at least one node")
        client_ports = ports or [free_port(host) for _ in range(size)]
        route_ports = [free_port(host) for _ in range(size)]
        self.nodes = [
            EmbeddedNats(
                store_dir / f"node{i + 1}",
                port=client_ports[i],
                host=host,
                max_payload=max_payload,
                routes=Routes(
                    f"heym-{i + 1}",
                    route_ports[i],
                    [p for j, p in enumerate(route_ports) if j != i],
                ),
            )
            for i in range(size)
        ]

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]

    @property
    def url(self) -> str:
        """Every node's URL, comma-separated (what HEYM_NATS_URL takes)."""
        return ",".join(self.urls)

    def start(self, timeout: float = 30.0) -> None:
        for node in self.nodes:
            node.start()
        try:
            asyncio.run(wait_jetstream(self.urls, timeout))
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def node_named(self, name: str) -> EmbeddedNats:
        return next(n for n in self.nodes if n.routes is not None and n.routes.name == name)


async def wait_jetstream(urls: list[str], timeout: float = 30.0) -> None:
    """Until the cluster's JetStream has a meta leader (streams can be created)."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            nc = await nats.connect(servers=urls, connect_timeout=2, max_reconnect_attempts=1)
            try:
                reply = await nc.request("$JS.API.INFO", b"", timeout=2)
                info = json.loads(reply.data)
                if "error" not in info:
                    return
                last = str(info["error"])
            finally:
                await nc.close()
        await asyncio.sleep(0.2)
    raise RuntimeError(f"the NATS cluster has no JetStream leader after {timeout:.0f}s ({last})")
