"""A parsed chat-completion request and the derived views that script matchers test."""

from __future__ import annotations

from typing import Any


class InvalidRequest(ValueError):
    """The body is not a chat-completion request (answered with HTTP 400)."""


def message_text(message: dict[str, Any]) -> str:
    """The text of a message whose content is a string or a list of content parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


class ChatRequest:
    """A validated `/v1/chat/completions` body; predicates in scripts receive this object."""

    def __init__(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        messages = body.get("messages")
        if not isinstance(model, str) or not model:
            raise InvalidRequest("'model' must be a non-empty string")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise InvalidRequest("'messages' must be a list of message objects")
        tools = body.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise InvalidRequest("'tools' must be a list")
        self.body: dict[str, Any] = body
        self.model: str = model
        self.messages: list[dict[str, Any]] = messages
        self.tools: list[dict[str, Any]] = [t for t in tools or [] if isinstance(t, dict)]
        self.stream: bool = body.get("stream") is True

    @property
    def last_user_text(self) -> str | None:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return message_text(message)
        return None

    @property
    def system_text(self) -> str:
        # "developer" is the newer name of the system role for reasoning models.
        roles = ("system", "developer")
        return "\n".join(message_text(m) for m in self.messages if m.get("role") in roles)

    @property
    def assistant_turns(self) -> int:
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def trailing_tool_messages(self) -> list[dict[str, Any]]:
        """The tool results sent since the last assistant turn, in order."""
        trailing: list[dict[str, Any]] = []
        for message in reversed(self.messages):
            if message.get("role") != "tool":
                break
            trailing.append(message)
        return trailing[::-1]

    @property
    def last_is_tool_result(self) -> bool:
        return bool(self.messages) and self.messages[-1].get("role") == "tool"

    @property
    def tool_results_text(self) -> str:
        return "\n".join(message_text(m) for m in self.trailing_tool_messages)

    def answered_tool_names(self) -> set[str]:
        """Names of the tools whose calls the trailing tool messages answer."""
        names_by_id: dict[str, str] = {}
        for message in self.messages:
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(call.get("id"), str):
                    names_by_id[call["id"]] = str(function.get("name", ""))
        names: set[str] = set()
        for message in self.trailing_tool_messages:
            # Some clients also put the tool name on the tool message itself.
            if isinstance(message.get("name"), str):
                names.add(message["name"])
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and call_id in names_by_id:
                names.add(names_by_id[call_id])
        return names

    @property
    def offered_tool_names(self) -> list[str]:
        names: list[str] = []
        for tool in self.tools:
            function = tool.get("function")
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.append(function["name"])
        return names

    @property
    def tool_choice(self) -> str:
        """The effective tool choice: a mode string or the forced function's name."""
        choice = self.body.get("tool_choice")
        if choice is None:
            return "auto" if self.tools else "none"
        if isinstance(choice, dict):
            function = choice.get("function")
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                return str(function["name"])
            return str(choice.get("type", ""))
        return str(choice)

    @property
    def response_format(self) -> str:
        response_format = self.body.get("response_format")
        if isinstance(response_format, dict) and isinstance(response_format.get("type"), str):
            return str(response_format["type"])
        return "text"
