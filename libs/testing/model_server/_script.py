"""The script vocabulary of the model server: matchers, replies, rules and their JSON loading."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

# Imported at runtime: msgspec resolves the predicate annotation when it builds a decoder.
from libs.testing.model_server._request import ChatRequest

DEFAULT_CONTEXT_WINDOW = 128_000
UNMATCHED_TEXT = "[model-server] no rule matched"


class Match(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Conditions on a chat request; every condition that is set must hold (an empty Match
    matches everything)."""

    last_user_equals: str | None = None
    last_user_contains: str | None = None
    last_user_regex: str | None = None
    system_contains: str | None = None
    # The "trailing" tool messages are the tool results sent since the last assistant turn.
    last_is_tool_result: bool | None = None
    tool_result_contains: str | None = None
    tool_result_for: str | None = None
    model: str | None = None
    tools_offered: bool | None = None
    tool_offered: str | None = None
    # "auto" / "none" / "required" or a forced function name; an absent tool_choice counts as
    # "auto" when tools are offered and "none" otherwise, as the OpenAI API defines it.
    tool_choice: str | None = None
    # response_format.type: "text" / "json_object" / "json_schema"; absent counts as "text".
    response_format: str | None = None
    assistant_turns: int | None = None
    # In-process only: JSON scripts cannot carry code.
    predicate: Callable[[ChatRequest], bool] | None = None


class ToolCall(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One scripted tool call; `raw_arguments` is sent verbatim (e.g. malformed JSON)."""

    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    id: str | None = None


class HttpError(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A scripted HTTP failure. `body` replaces the default OpenAI-style error body."""

    status: int = 500
    message: str = "scripted model-server error"
    type: str = "server_error"
    body: Any = None
    headers: dict[str, str] = {}


class Reply(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to answer. Text may use the placeholders `{tool_results}` and `{last_user}`."""

    text: str | None = None
    tool_calls: list[ToolCall] = []
    # Serialised as the message content, for response_format requests.
    json: Any = None
    error: HttpError | None = None
    # Seconds to wait before answering; None falls back to the script's default latency.
    delay: float | None = None
    # Wait Script.hang_seconds (longer than any sane client timeout) before answering.
    hang: bool = False
    finish_reason: str | None = None


class Rule(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A matcher and a reply; `times` caps how often the rule may match (None = unlimited)."""

    reply: Reply
    when: Match = Match()
    times: int | None = None
    name: str | None = None


class Script(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An ordered rule list (first match wins) plus server-wide behaviour."""

    rules: list[Rule] = []
    latency: float = 0.0
    hang_seconds: float = 600.0
    unmatched_status: int = 200
    unmatched_text: str = UNMATCHED_TEXT
    context_windows: dict[str, int] = {}
    default_context_window: int = DEFAULT_CONTEXT_WINDOW

    @classmethod
    def from_obj(cls, obj: Any) -> Script:
        """Validate a decoded JSON document: a full script object, or a bare list of rules."""
        if isinstance(obj, list):
            obj = {"rules": obj}
        return msgspec.convert(obj, cls)

    @classmethod
    def from_json(cls, text: str | bytes) -> Script:
        return cls.from_obj(msgspec.json.decode(text))

    @classmethod
    def load(cls, path: str | Path) -> Script:
        return cls.from_json(Path(path).read_bytes())

    def context_window(self, model: str) -> int:
        return self.context_windows.get(model, self.default_context_window)
