"""The dev stack: embedded servers, migrations, the admin account, five services, status table."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time

import asyncpg
import msgspec
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
from libs.embedded import EmbeddedNats, EmbeddedPostgres
from libs.embedded.process import port_open
from libs.eventlog import provision_run_stream
from libs.secrets import SecretBox, load_or_create_key

log = logging.getLogger(__name__)

SERVICE_ORDER = ("scheduler", "agent_runtime", "tool_sandbox", "review", "gateway")


class StackError(RuntimeError):
    """The stack cannot start (port in use, server failed); the message says what to do."""


def say(text: str) -> None:
    print(text, flush=True)


class Stack:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
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
    def start_infra(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.settings.nats_url:
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
        nc = await nats.connect(self.nats_url)
        try:
            await provision_run_stream(
                nc,
                max_message_bytes=self.settings.max_message_bytes,
                duplicate_window_s=self.settings.duplicate_window_s,
                replicas=self.settings.stream_replicas,
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
        for name in SERVICE_ORDER:
            child = Child(name, service_env(name, env), self.data_dir / "logs")
            await child.start()
            self.children[name] = child

    async def wait_healthy(self, nc: NATS, timeout: float = 90.0) -> dict[str, HealthReply]:
        decode = msgspec.json.Decoder(HealthReply).decode
        found: dict[str, HealthReply] = {}
        deadline = time.monotonic() + timeout
        while len(found) < len(self.children):
            for name, child in self.children.items():
                if name in found:
                    continue
                if child.process is not None and child.process.returncode is not None:
                    raise StackError(
                        f"{name} exited with code {child.process.returncode} while starting:\n"
                        f"{child.log_tail(25)}"
                    )
                with contextlib.suppress(nats.errors.TimeoutError, nats.errors.NoRespondersError):
                    msg = await nc.request(subjects.health(name), b"", timeout=0.5)
                    reply = decode(msg.data)
                    if reply.state == "healthy":
                        found[name] = reply
            if time.monotonic() > deadline:
                missing = sorted(set(self.children) - set(found))
                raise StackError(f"services not healthy after {timeout:.0f}s: {', '.join(missing)}")
            if len(found) < len(self.children):
                await asyncio.sleep(0.1)
        return found

    def status_table(self, health: dict[str, HealthReply]) -> str:
        rows = [("service", "pid", "address", "state")]
        if self.nats is not None:
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
        for name in SERVICE_ORDER:
            child = self.children[name]
            address = (
                f"http://{self.settings.http_host}:{self.settings.http_port}"
                if name == "gateway"
                else subjects.health(name)
            )
            state = "?"
            if name in health:
                state = _state(health[name])
            rows.append((name, str(child.pid), address, state))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

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


async def run_stack(settings: Settings) -> int:
    stack = Stack(settings)
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
        nc = await nats.connect(stack.nats_url)
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
        shown.append(value if key == "sandbox" else f"{key.replace('_', ' ')} {value}")
    return ", ".join(shown)
