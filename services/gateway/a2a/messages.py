"""A client's A2A Message, checked and turned into the user message of a turn.

Text and data parts only (files are refused: send them as links), at most 20,000 characters
together (data counted as its JSON). A data part `{"answers": {question: answer}}` answers a
clarifying question as the Chat tab does (`[Plan answers]` lines); other data is appended to
the text as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from contracts.chat import MAX_MESSAGE_CHARS
from libs.a2a import wire
from services.gateway.a2a.jsonrpc import RpcError, invalid

MAX_PARTS = 64
FILE_REFUSED = "file parts are not accepted: send files as links in a text part"


@dataclass(frozen=True)
class Incoming:
    message_id: str
    task_id: str | None
    context_id: str | None
    content: str
    received: dict[str, Any]


def checked(message: Any) -> Incoming:
    if not isinstance(message, dict):
        raise invalid("message is required and must be an object", "message")
    message_id = message.get("messageId")
    if not isinstance(message_id, str) or not message_id or len(message_id) > 256:
        raise invalid("message.messageId must be a string of 1-256 characters", "message.messageId")
    role = message.get("role")
    if role != wire.ROLE_USER:
        raise invalid("message.role must be ROLE_USER", "message.role")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise invalid("message.parts must be a non-empty list", "message.parts")
    if len(parts) > MAX_PARTS:
        raise invalid(f"message.parts has more than {MAX_PARTS} parts", "message.parts")
    texts: list[str] = []
    kept: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            raise invalid(f"message.parts[{i}] must be an object", "message.parts")
        if "raw" in part or "url" in part or "file" in part:
            raise RpcError(wire.CONTENT_TYPE_NOT_SUPPORTED, FILE_REFUSED)
        has_text, has_data = "text" in part, "data" in part
        if has_text == has_data:
            raise invalid(
                f"message.parts[{i}] must have exactly one of text or data", "message.parts"
            )
        if has_text:
            if not isinstance(part["text"], str):
                raise invalid(f"message.parts[{i}].text must be a string", "message.parts")
            texts.append(part["text"])
            kept.append({"text": part["text"]})
        else:
            if not isinstance(part["data"], dict):
                raise invalid(f"message.parts[{i}].data must be an object", "message.parts")
            texts.append(_data_text(part["data"]))
            kept.append({"data": part["data"]})
        if sum(len(t) for t in texts) > MAX_MESSAGE_CHARS:
            raise invalid(
                f"text and data parts are longer than {MAX_MESSAGE_CHARS:,} characters together",
                "message.parts",
            )
    content = "\n\n".join(t for t in texts if t.strip())
    if not content.strip():
        raise invalid("the message has no text", "message.parts")
    task_id = _opt_id(message, "taskId")
    context_id = _opt_id(message, "contextId")
    received: dict[str, Any] = {"messageId": message_id, "role": wire.ROLE_USER, "parts": kept}
    meta = message.get("metadata")
    if isinstance(meta, dict) and len(json.dumps(meta, default=str)) <= 4000:
        received["metadata"] = meta
    return Incoming(message_id, task_id, context_id, content, received)


def _opt_id(message: dict[str, Any], name: str) -> str | None:
    value = message.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 256:
        raise invalid(f"message.{name} must be a string", f"message.{name}")
    return value


def _data_text(data: dict[str, Any]) -> str:
    answers = data.get("answers")
    if isinstance(answers, dict) and answers:
        lines = ["[Plan answers]"] + [f"- {q} → {a}" for q, a in answers.items()]
        return "\n".join(lines)
    return json.dumps(data, ensure_ascii=False, default=str)
