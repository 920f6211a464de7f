"""What a tool runs with (`ToolEnv`: the user, the turn, the stores) and what it gives back."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from nats.aio.client import Client as NATS

from libs.chat import Conversation, ToolCall, Turn
from libs.config import Settings
from libs.eventlog import EventLog
from libs.secrets.credentials import ResolvedCredential
from services.agent_runtime.model import ModelClients

_IDS = uuid.UUID("9a4c2f3e-1b7d-4e8a-a5c6-2d9f0e1b3c47")


@dataclass
class ToolEnv:
    pool: asyncpg.Pool[Any]
    nc: NATS
    event_log: EventLog
    models: ModelClients
    settings: Settings
    conv: Conversation
    turn: Turn
    credential: ResolvedCredential | None

    @property
    def owner_id(self) -> str:
        return self.conv.owner_id

    @property
    def conversation_id(self) -> str:
        return self.conv.conversation_id

    @property
    def model(self) -> str:
        started = self.turn.started
        return (started.model if started else "") or self.turn.message.model

    @property
    def mode(self) -> str:
        return self.turn.message.credential_mode

    def fixed_id(self, call: ToolCall, purpose: str) -> str:
        """A deterministic id for what a call creates (a run, a workflow), so a call repeated
        after a restart names the same thing instead of making another."""
        return str(uuid.uuid5(_IDS, f"{self.conversation_id}:{call.call_id}:{purpose}"))


@dataclass
class Outcome:
    result: Any
    notices: list[dict[str, Any]] = field(default_factory=list)


def error(message: str, **extra: Any) -> Outcome:
    return Outcome({"error": message, **extra})


def text_arg(args: dict[str, Any], name: str, default: str = "") -> str:
    value = args.get(name, default)
    return value.strip() if isinstance(value, str) else default


def int_arg(args: dict[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    try:
        value = int(args.get(name, default))
    except (TypeError, ValueError):
        value = default
    return max(lo, min(hi, value))
