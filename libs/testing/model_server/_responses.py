"""OpenAI wire shapes: chat.completion bodies, streamed chunks, error bodies and token estimates."""

from __future__ import annotations

from typing import Any

import msgspec

from libs.testing.model_server._matching import fill, fill_value
from libs.testing.model_server._request import ChatRequest
from libs.testing.model_server._script import Reply

# Streamed text and arguments are cut into pieces this long, so clients exercise reassembly.
STREAM_PIECE = 16


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """A rendered assistant turn, before it is shaped as a body or as chunks."""

    content: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str


def estimate_tokens(text: str) -> int:
    """The usual rough estimate: four characters per token, never zero."""
    return max(1, len(text) // 4)


def render(reply: Reply, request: ChatRequest, seq: int) -> Answer:
    """Turn a scripted reply into an assistant turn for this request."""
    content: str | None = None
    if reply.json is not None:
        content = msgspec.json.encode(fill_value(reply.json, request)).decode()
    elif reply.text is not None:
        content = fill(reply.text, request)
    calls: list[dict[str, Any]] = []
    for index, call in enumerate(reply.tool_calls):
        if call.raw_arguments is not None:
            arguments = fill(call.raw_arguments, request)
        else:
            arguments = msgspec.json.encode(fill_value(call.arguments or {}, request)).decode()
        calls.append(
            {
                "id": call.id or f"call_{seq}_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            }
        )
    if content is None and not calls:
        content = ""
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return Answer(content=content, tool_calls=calls, finish_reason=finish)


def usage(answer: Answer, request: ChatRequest) -> dict[str, int]:
    prompt_chars = msgspec.json.encode([request.messages, request.tools]).decode()
    completion_chars = (answer.content or "") + "".join(
        c["function"]["name"] + c["function"]["arguments"] for c in answer.tool_calls
    )
    prompt = estimate_tokens(prompt_chars)
    completion = estimate_tokens(completion_chars)
    total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def completion_body(
    answer: Answer, request: ChatRequest, completion_id: str, created: int
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content, "refusal": None}
    if answer.tool_calls:
        message["tool_calls"] = answer.tool_calls
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": answer.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": usage(answer, request),
    }


def stream_events(
    answer: Answer, request: ChatRequest, completion_id: str, created: int
) -> list[bytes]:
    """The SSE frames of a streamed answer, ending with `data: [DONE]`."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {**head, "choices": [choice]}

    head = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": request.model,
    }
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(answer.content or "")]
    for index, call in enumerate(answer.tool_calls):
        opening = {"index": index, "id": call["id"], "type": "function"}
        function = {"name": call["function"]["name"], "arguments": ""}
        chunks.append(chunk({"tool_calls": [{**opening, "function": function}]}))
        for piece in _pieces(call["function"]["arguments"]):
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            chunks.append(chunk(delta))
    chunks.append(chunk({}, answer.finish_reason))
    options = request.body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        chunks.append({**head, "choices": [], "usage": usage(answer, request)})
    frames = [b"data: " + msgspec.json.encode(c) + b"\n\n" for c in chunks]
    return [*frames, b"data: [DONE]\n\n"]


def _pieces(text: str) -> list[str]:
    return [text[i : i + STREAM_PIECE] for i in range(0, len(text), STREAM_PIECE)]


def error_body(message: str, kind: str, code: int | str | None = None) -> dict[str, Any]:
    """The OpenAI error envelope, which the openai client turns into `APIStatusError.message`."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
