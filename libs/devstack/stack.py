"""The dev stack: embedded servers (one nats-server or a cluster), migrations, the admin account,
the five services (some with several replicas), the status table."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time

import asyncpg
import nats
import nats.errors
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.health import HealthReply
from libs import telemetry
from libs.accounts import ADMIN_EMAIL, ensure_admin
from libs.config import Settings, service_env
from libs.db import apply_migrations
from libs.db.pool import init_connection
from libs.devstack.children import Child, child_env, current_env, watch
from libs.devstack.demo import EXAMPLE_NAME, ensure_example, run_example
from libs.devstack.demo_model import (
    DEMO_CREDENTIAL,
    ensure_demo_credential,
    needs_demo_model,
    start_demo_model,
)
from libs.devstack.status import child_name, health_replies, service_of, table
from libs.embedded import EmbeddedNats, EmbeddedNatsCluster, EmbeddedPostgres
from libs.embedded.process import port_open
from libs.eventlog import provision_run_stream
from libs.secrets import SecretBox, load_or_create_key

log = logging.getLogger(__name__)

SERVICE_ORDER = ("scheduler", "agent_runtime", "tool_sandbox", "review", "gateway")


class StackError(RuntimeError):
    """The stack cannot start (port in use, server failed); the message says what to do."""


def say(text: str) -> None:
    print(text, flush=True)


def parse_replicas(spec: str) -> dict[str, int]:
    """`scheduler=3,agent_runtime=2` -> {"scheduler": 3, "agent_runtime": 2}."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, count = part.partition("=")
        name = name.strip()
        if name not in subjects.SERVICES:
            raise StackError(f"--replicas: unknown service {name!r} ({', '.join(SERVICE_ORDER)})")
        if not count.strip().isdigit() or not 1 <= int(count) <= 16:
            raise StackError(f"--replicas: {name} needs a count from 1 to 16, got {count!r}")
        if name == "gateway" and int(count) > 1:
            raise StackError(
                "--replicas: heym up runs one gateway (it owns the HTTP port); run several "
                "behind a load balancer in a deployment (docs/deploy.md)"
            )
        out[name] = int(count)
    return out


class Stack:
    def __init__(
        self, settings: Settings, *, nats_cluster: int = 1, replicas: dict[str, int] | None = None
    ) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
        self.cluster_size = nats_cluster
        self.replicas = replicas or {}
        # a cluster's run stream is replicated (R3 with 3 or more nodes)
        self.stream_replicas = (
            settings.stream_replicas
            if nats_cluster == 1
            else min(nats_cluster, max(settings.stream_replicas, 3))
        )
        self.cluster: EmbeddedNatsCluster | None = None
        self.nats: EmbeddedNats | None = None
        self.postgres: EmbeddedPostgres | None = None
        self.nats_url = settings.nats_url or ""
        self.database_url = settings.database_url or ""
        self.children: dict[str, Child] = {}
        self.stopping = asyncio.Event()
        self.example_id: str | None = None
        self.admin_id = ""
        self.model_server: Child | None = None
        self.model_url = ""

    # -- infrastructure -------------------------------------------------------------------
    @property
    def nats_servers(self) -> list[str]:
        return [u for u in self.nats_url.split(",") if u]

    def start_infra(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.settings.nats_url and self.cluster_size > 1:
            ports = [self.settings.nats_port + i for i in range(self.cluster_size)]
            busy = [p for p in ports if port_open("127.0.0.1", p)]
            if busy:
                raise StackError(
                    f"port(s) {busy} in use; the cluster uses HEYM_NATS_PORT and the next "
                    f"{self.cluster_size - 1}: set HEYM_NATS_PORT to a free range"
                )
            self.cluster = EmbeddedNatsCluster(
                self.data_dir / "nats-cluster",
                self.cluster_size,
                ports=ports,
                max_payload=self.settings.max_message_bytes,
            )
            self.cluster.start()
            self.nats_url = self.cluster.url
        elif not self.settings.nats_url:
            if port_open("127.0.0.1", self.settings.nats_port):
                raise StackError(
                    f"port {self.settings.nats_port} is in use; set HEYM_NATS_PORT to a free port "
                    "or HEYM_NATS_URL to use that server"
                )
            self.nats = EmbeddedNats(
                self.data_dir / "nats",
                port=self.settings.nats_port,
                max_payload=self.settings.max_message_bytes,
            )
            self.nats.start()
            self.nats_url = self.nats.url
        if not self.settings.database_url:
            self.postgres = EmbeddedPostgres(self.data_dir / "pg")
            self.database_url = self.postgres.start()
        if port_open(self.settings.http_host, self.settings.http_port):
            raise StackError(
                f"HTTP port {self.settings.http_port} is in use; set HEYM_HTTP_PORT to a free port"
            )

    async def prepare(self) -> str | None:
        """Provision the stream, migrate, ensure the admin; returns a new admin key to print."""
        nc = await nats.connect(servers=self.nats_servers)
        try:
            await provision_run_stream(
                nc,
                max_message_bytes=self.settings.max_message_bytes,
                duplicate_window_s=self.settings.duplicate_window_s,
                replicas=self.stream_replicas,
            )
        finally:
            await nc.close()
        conn = await asyncpg.connect(self.database_url)
        try:
            await init_connection(conn)
            await apply_migrations(conn)
            new_key = await ensure_admin(conn, self.settings.admin_api_key)
            self.example_id = await ensure_example(conn)
            self.admin_id = str(
                await conn.fetchval("SELECT id FROM users WHERE email = $1", ADMIN_EMAIL)
            )
            return new_key
        finally:
            await conn.close()

    # -- services ---------------------------------------------------------------------------
    async def start_services(self) -> None:
        secret = self.settings.secret_key or load_or_create_key(self.data_dir / "secret.key")
        env = child_env(
            current_env(),
            HEYM_NATS_URL=self.nats_url,
            HEYM_DATABASE_URL=self.database_url,
            HEYM_DATA_DIR=str(self.data_dir),
            HEYM_SECRET_KEY=secret,
            HEYM_STREAM_REPLICAS=str(self.stream_replicas),
        )
        conn = await asyncpg.connect(self.database_url)
        try:
            if await needs_demo_model(conn):
                child, url = await start_demo_model(env, self.data_dir / "logs")
                self.model_server = child
                self.model_url = url
                await ensure_demo_credential(conn, SecretBox.from_setting(secret), url)
        finally:
            await conn.close()
        for service in SERVICE_ORDER:
            for i in range(1, self.replicas.get(service, 1) + 1):
                name = child_name(service, i)
                child = Child(
                    name,
                    service_env(service, env),
                    self.data_dir / "logs",
                    argv=["-m", f"services.{service}"],
                )
                await child.start()
                self.children[name] = child

    async def health(self, nc: NATS) -> dict[str, HealthReply]:
        """Each child's health reply (matched by pid: every replica answers its service)."""
        found: dict[str, HealthReply] = {}
        for service in SERVICE_ORDER:
            with contextlib.suppress(nats.errors.Error):
                replies = await health_replies(nc, service)
                for name, child in self.children.items():
                    if service_of(name) == service and child.pid in replies:
                        found[name] = replies[child.pid]
        return found

    async def wait_healthy(self, nc: NATS, timeout: float = 90.0) -> dict[str, HealthReply]:
        found: dict[str, HealthReply] = {}
        deadline = time.monotonic() + timeout
        while len(found) < len(self.children):
            for name, child in self.children.items():
                if child.process is not None and child.process.returncode is not None:
                    raise StackError(
                        f"{name} exited with code {child.process.returncode} while starting:\n"
                        f"{child.log_tail(25)}"
                    )
            found = {n: r for n, r in (await self.health(nc)).items() if r.state == "healthy"}
            if time.monotonic() > deadline:
                missing = sorted(set(self.children) - set(found))
                raise StackError(f"services not healthy after {timeout:.0f}s: {', '.join(missing)}")
            if len(found) < len(self.children):
                await asyncio.sleep(0.1)
        return found

    def status_table(self, health: dict[str, HealthReply]) -> str:
        rows: list[tuple[str, str, str, str]] = []
        if self.cluster is not None:
            for node in self.cluster.nodes:
                assert node.routes is not None
                rows.append(
                    (
                        f"nats ({node.routes.name})",
                        str(node.pid),
                        node.url,
                        f"running (embedded, JetStream cluster of {self.cluster_size}, "
                        f"run stream R{self.stream_replicas}, sync always)",
                    )
                )
        elif self.nats is not None:
            rows.append(
                (
                    "nats",
                    str(self.nats.pid),
                    self.nats_url,
                    "running (embedded, JetStream, sync always)",
                )
            )
        else:
            rows.append(("nats", "-", self.nats_url, "external"))
        if self.postgres is not None:
            rows.append(
                (
                    "postgres",
                    str(self.postgres.pid or "-"),
                    str(self.data_dir / "pg"),
                    "running (embedded)",
                )
            )
        else:
            rows.append(("postgres", "-", "HEYM_DATABASE_URL", "external"))
        if self.model_server is not None:
            rows.append(
                (
                    "model-server",
                    str(self.model_server.pid),
                    self.model_url,
                    f"scripted demo model: no model credential configured ({DEMO_CREDENTIAL!r})",
                )
            )
        rows.append(self.traces_row(health))
        for name, child in self.children.items():
            service = service_of(name)
            address = (
                f"http://{self.settings.http_host}:{self.settings.http_port}"
                if service == "gateway"
                else subjects.health(service)
            )
            state = "?"
            if name in health:
                state = _state(health[name])
            rows.append((name, str(child.pid), address, state))
        return table(rows)

    def traces_row(self, health: dict[str, HealthReply]) -> tuple[str, str, str, str]:
        """Where spans go (`HEYM_OTEL_*`), as the services report it."""
        shown = telemetry.configuration(self.settings)
        if not shown["enabled"]:
            return ("traces", "-", "-", "off (set HEYM_OTEL_ENABLED=true to export spans)")
        reasons = {r for h in health.values() if (r := h.details.get("otel_disabled"))}
        if reasons:
            return ("traces", "-", shown["endpoint"] or "-", f"off: {sorted(reasons)[0]}")
        state = f"OTLP/HTTP, sampler ratio {shown['sampler_ratio']}"
        if shown["metrics_enabled"]:
            state += ", metrics on"
        return ("traces", "-", shown["traces_endpoint"], state)

    async def stop(self) -> None:
        self.stopping.set()
        extra = [self.model_server] if self.model_server is not None else []
        await asyncio.gather(
            *(c.stop(self.settings.shutdown_grace_s) for c in [*self.children.values(), *extra]),
            return_exceptions=True,
        )
        if self.postgres is not None:
            await asyncio.to_thread(self.postgres.stop)
        if self.nats is not None:
            await asyncio.to_thread(self.nats.stop)
        if self.cluster is not None:
            await asyncio.to_thread(self.cluster.stop)


async def run_stack(
    settings: Settings, *, nats_cluster: int = 1, replicas: dict[str, int] | None = None
) -> int:
    stack = Stack(settings, nats_cluster=nats_cluster, replicas=replicas)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stack.stopping.set)
    watchers: list[asyncio.Task[None]] = []
    try:
        say(f"Starting Heym in {stack.data_dir} ...")
        await asyncio.to_thread(stack.start_infra)
        new_key = await stack.prepare()
        if new_key:
            say(f"Created the admin user; its API key (shown once, keep it): {new_key}")
        await stack.start_services()
        nc = await nats.connect(servers=stack.nats_servers)
        try:
            health = await stack.wait_healthy(nc)
            say(stack.status_table(health))
            if stack.example_id:
                done = await run_example(nc, stack.example_id, stack.admin_id)
                outputs = json.dumps(done.outputs)
                say(f"Example workflow {EXAMPLE_NAME!r} ran ({done.status}): {outputs}")
        finally:
            await nc.close()
        base = f"http://{settings.http_host}:{settings.http_port}"
        if stack.example_id:
            say(
                f"Run it yourself: curl -s -X POST {base}/api/workflows/{stack.example_id}/execute "
                '-H "X-MCP-Key: $HEYM_API_KEY" -H "Content-Type: application/json" '
                '-d \'{"text": "you"}\''
            )
        say(
            f"Heym is ready at {base} (OpenAPI {base}/schema, events {base}/asyncapi.json, "
            f"run inspector {base}/ui: sign in with the API key). "
            f"Logs in {stack.data_dir / 'logs'}. Ctrl-C stops everything."
        )
        watchers = [
            asyncio.create_task(watch(c, stopping=stack.stopping, on_event=say))
            for c in stack.children.values()
        ]
        await stack.stopping.wait()
        say("Stopping Heym ...")
        return 0
    except StackError as exc:
        say(f"heym up failed: {exc}")
        return 1
    finally:
        stack.stopping.set()
        for w in watchers:
            w.cancel()
        await stack.stop()
        say("Heym stopped.")


def _state(health: HealthReply) -> str:
    """A service's state and its own details, named ("healthy, active runs 0"; the tool
    sandbox's "sandbox: bubblewrap"); tracing details are the traces row's."""
    shown: list[str] = [health.state]
    for key, value in health.details.items():
        if key.startswith("otel"):
            continue
        # labelled values as they are ("sandbox: bubblewrap", "runs partitions 0,3,9")
        labelled = key == "sandbox" or key.startswith("partitions_")
        shown.append(value if labelled else f"{key.replace('_', ' ')} {value}")
    return ", ".join(shown)
