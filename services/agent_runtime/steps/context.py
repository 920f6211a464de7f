"""`StepContext`: what a step needs of its invocation: the fold, the call, and the recorder."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from contracts.base import Event
from libs.secrets.credentials import ResolvedCredential
from libs.tools.agent_tools import AgentToolSource
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import AgentState
from services.agent_runtime.effects import Effects
from services.agent_runtime.memory.context import MemoryReader
from services.agent_runtime.model import ModelClients
from services.agent_runtime.tools.spec import ToolSpec

Resolve = Callable[[str, str], Awaitable[ResolvedCredential | None]]
Record = Callable[[list[Event]], Awaitable[None]]
Hold = Callable[[list[Event]], None]


class AgentFailed(Exception):
    """A step cannot go on: the invocation ends with this error (retryable or not)."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Services:
    """The process-wide collaborators every step may use."""

    models: ModelClients
    resolve: Resolve
    effects: Effects
    # stored skills and MCP tools (libs/tools); None where no database is at hand (tests)
    tools: AgentToolSource | None = None
    # The memory read model (prompt blocks at start); None runs agents without memory.
    memory: MemoryReader | None = None


@dataclass
class StepContext:
    state: AgentState
    call: AgentCall
    record: Record
    services: Services
    # Folds events now and appends them with the next `record` (see `record_soon`).
    hold: Hold | None = None
    _credentials: dict[str, ResolvedCredential] = field(default_factory=dict)

    async def record_soon(self, events: list[Event]) -> None:
        """Record `events` in the same append as the next step's: for a step whose outcome
        only the next step acts on (the actor flushes before any step that could act on it
        outside the invocation). Saves an append on the invocation's path."""
        if self.hold is None:
            await self.record(events)
        else:
            self.hold(events)

    @property
    def data(self) -> dict[str, Any]:
        return self.call.data

    def specs(self) -> dict[str, ToolSpec]:
        assert self.state.started is not None
        return {t["name"]: ToolSpec(**t) for t in self.state.started.tools}

    async def credential(self, credential_id: str) -> ResolvedCredential:
        found = self._credentials.get(credential_id)
        if found is None:
            found = await self.services.resolve(credential_id, self.call.owner_id)
            if found is None:
                raise AgentFailed(f"credential {credential_id!r} not found", retryable=False)
            self._credentials[credential_id] = found
        return found
