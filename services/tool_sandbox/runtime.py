"""`SandboxRuntime`: the sandbox's parts built once from settings (no I/O until used).

Least privilege: the sandbox holds no database URL and no secret key. Stored MCP connections
are asked of the agent runtime (`libs/tools/connection_query.py`), output files go to the
JetStream object store (`libs/tools/file_store.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uv
from nats.aio.client import Client as NATS

from libs.config import Settings
from libs.tools import connection_query, credential_query
from libs.tools.file_store import FileStore, GeneratedFile
from libs.tools.mcp_config import McpServer
from services.tool_sandbox.a2a_client import RemoteAgentError, RemoteCall
from services.tool_sandbox.containment.policy import Containment, Limits, plan
from services.tool_sandbox.containment.probe import confirm
from services.tool_sandbox.executor import ToolExecutor
from services.tool_sandbox.fairness import FairScheduler
from services.tool_sandbox.mcp.client import McpClient
from services.tool_sandbox.output_files import publish
from services.tool_sandbox.processes import OutputCaps, ProcessRunner
from services.tool_sandbox.python_tools import PythonToolRunner
from services.tool_sandbox.skills import SkillRunner

log = logging.getLogger(__name__)


def _uv_bin() -> str | None:
    try:
        return str(uv.find_uv_bin())
    except (FileNotFoundError, OSError):
        return None


class SandboxRuntime:
    def __init__(self, settings: Settings, nc: Callable[[], NATS]) -> None:
        self.settings = settings
        self._nc = nc
        self._files: FileStore | None = None
        root = settings.data_dir.resolve() / "sandbox"
        self.uv_cache = root / "uv-cache"
        self.uv_cache.mkdir(parents=True, exist_ok=True)
        uv_bin = _uv_bin()

        def planned(bubblewrap: str) -> Containment:
            return plan(
                bubblewrap=bubblewrap,
                data_dir=settings.data_dir,
                uid_base=settings.sandbox_uid_base,
                uv_cache=self.uv_cache,
                uv_bin=uv_bin,
            )

        wanted = planned(settings.sandbox_bubblewrap)
        fallback = wanted if settings.sandbox_bubblewrap == "require" else planned("off")
        self.containment: Containment = confirm(wanted, root / "work", fallback=fallback)
        for note in self.containment.notes:
            log.warning("sandbox: %s", note)
        log.info("tool sandbox containment: %s", self.containment.label)
        limits = Limits()
        self.processes = ProcessRunner(
            self.containment,
            uv_bin=uv_bin,
            uv_cache=self.uv_cache,
            caps=OutputCaps(),
            limits=limits,
        )
        work = root / "work"
        self.skills = SkillRunner(self.processes, work_root=work, runner=settings.skill_runner)
        self.python_tools = PythonToolRunner(self.processes, work_root=work)
        self.mcp = McpClient(
            self.containment,
            work_root=root / "mcp",
            load_stored=self._load_server,
            limits=Limits(memory_kind="data", processes=256, cpu_s=24 * 3600),
            first_slot=settings.sandbox_processes,
        )
        self.http = httpx.AsyncClient(limits=httpx.Limits(max_connections=100))
        # remote A2A agents: one pooled transport, a client per call (its own budget and key)
        self.a2a_transport = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=100))
        self.a2a = RemoteCall(
            self.a2a_transport, max_response_bytes=settings.http_max_response_bytes
        )
        self.io = FairScheduler(
            "tool_sandbox-io",
            limit=settings.sandbox_concurrency,
            per_user=settings.sandbox_user_concurrency,
        )
        self.process_slots = FairScheduler(
            "tool_sandbox-processes",
            limit=settings.sandbox_processes,
            per_user=settings.sandbox_user_processes,
        )
        self.executor = ToolExecutor(
            skills=self.skills,
            python_tools=self.python_tools,
            mcp=self.mcp,
            http=self.http,
            publisher=self._publisher,
            a2a=self.a2a,
            credentials=self._tool_credential,
            http_timeout_s=settings.http_timeout_s,
            http_max_response_bytes=settings.http_max_response_bytes,
        )

    async def _load_server(self, owner: str, connection_id: str) -> McpServer | None:
        return await connection_query.request(self._nc(), owner, connection_id)

    async def _tool_credential(self, run_id: str, item_id: str) -> str:
        try:
            return await credential_query.request(self._nc(), run_id, item_id)
        except credential_query.CredentialUnavailable as exc:
            raise RemoteAgentError(str(exc)) from None

    def files(self) -> FileStore:
        if self._files is None:
            self._files = FileStore(self._nc())
        return self._files

    def _publisher(self, owner: str, run_id: str, tool_call_id: str) -> Any:
        async def store(name: str, mime: str, data: bytes) -> GeneratedFile:
            return await self.files().put(
                owner_id=owner,
                filename=name,
                mime_type=mime,
                content=data,
                run_id=run_id,
                tool_call_id=tool_call_id,
            )

        async def publish_files(ws: Path, result: Any) -> Any:
            return await publish(ws, result, store)

        return publish_files

    async def close(self) -> None:
        await self.io.drain(self.settings.shutdown_grace_s)
        await self.process_slots.drain(self.settings.shutdown_grace_s)
        await self.mcp.close()
        await self.http.aclose()
        await self.a2a_transport.aclose()
