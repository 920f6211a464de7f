"""Running the app under uvicorn: in a background thread (tests) or in the foreground (process)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType

import uvicorn

from libs.testing.model_server._app import build_app
from libs.testing.model_server._engine import Engine, LedgerEntry
from libs.testing.model_server._script import Rule, Script

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


class _Uvicorn(uvicorn.Server):
    """uvicorn with two changes: shutdown first wakes delayed answers (a scripted hang would
    otherwise block it), and signals end the process with status 0 instead of being re-raised
    after the graceful shutdown."""

    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_shutdown = on_shutdown

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._on_shutdown()
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def listening_socket(host: str, port: int) -> socket.socket:
    """Bind and listen before uvicorn starts, so the port is known (port 0 = ephemeral) and
    early connections queue in the backlog instead of being refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def make_server(engine: Engine, *, quiet: bool) -> _Uvicorn:
    closing = asyncio.Event()
    config = uvicorn.Config(
        build_app(engine, closing),
        # In-process the host's logging (pytest's) stays untouched.
        log_config=None if quiet else uvicorn.config.LOGGING_CONFIG,
        log_level="warning",
        access_log=False,
        lifespan="on",
        loop="uvloop",
        timeout_graceful_shutdown=5,
    )
    return _Uvicorn(config, on_shutdown=closing.set)


def _as_script(script: Script | Sequence[Rule] | None) -> Script:
    if script is None:
        return Script()
    if isinstance(script, Script):
        return script
    return Script(rules=list(script))


class ModelServer:
    """A scripted OpenAI-compatible server on a loopback port, served from a background thread.

    Use as `with ModelServer(script) as srv:` or call start()/stop(); point clients at
    `srv.base_url`.
    """

    def __init__(
        self,
        script: Script | Sequence[Rule] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._engine = Engine(_as_script(script))
        self._host = host
        self._requested_port = port
        self._port: int | None = None
        self._server: _Uvicorn | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._failure: BaseException | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the model server is not running")
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, e.g. `http://127.0.0.1:PORT/v1`."""
        return f"{self.url}/v1"

    @property
    def script(self) -> Script:
        return self._engine.script

    @script.setter
    def script(self, script: Script | Sequence[Rule]) -> None:
        self._engine.replace_script(_as_script(script))

    @property
    def ledger(self) -> list[LedgerEntry]:
        """A snapshot of every request received so far, in arrival order."""
        return self._engine.ledger()

    @property
    def chat_requests(self) -> list[LedgerEntry]:
        """The ledger restricted to chat-completion requests."""
        return [e for e in self._engine.ledger() if e.path == "/v1/chat/completions"]

    def clear_ledger(self) -> None:
        self._engine.clear_ledger()

    def start(self) -> ModelServer:
        if self._thread is not None:
            raise RuntimeError("the model server is already running")
        sock = listening_socket(self._host, self._requested_port)
        try:
            self._server = make_server(self._engine, quiet=True)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._port = int(sock.getsockname()[1])
        self._failure = None
        self._thread = threading.Thread(
            target=self._run,
            args=(self._server, self._sock),
            name=f"model-server-{self._port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the model server did not start") from self._failure
            time.sleep(0.005)
        return self

    def _run(self, server: _Uvicorn, sock: socket.socket) -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # surfaced by start(); a thread cannot raise to its owner
            self._failure = exc

    def stop(self) -> None:
        server, thread, sock = self._server, self._thread, self._sock
        if server is not None and thread is not None:
            server.should_exit = True
            thread.join(STOP_TIMEOUT)
            if thread.is_alive():
                server.force_exit = True
                thread.join(STOP_TIMEOUT)
        if sock is not None:
            sock.close()
        self._server = self._thread = self._sock = None
        self._port = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
