"""Message builders shared by the compression tests."""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]

SYSTEM: Message = {"role": "system", "content": "You are a helpful agent."}
FIRST_USER: Message = {"role": "user", "content": "Do the task."}
LAST_USER: Message = {"role": "user", "content": "Continue from here."}


def assistant(text: str, *call_ids: str) -> Message:
    calls = [
        {"id": cid, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        for cid in call_ids
    ]
    message: Message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    return message


def tool(call_id: str, text: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def pairs(count: int, start: int = 0) -> list[Message]:
    """`count` assistant turns, each with one tool call and its answer."""
    out: list[Message] = []
    for i in range(start, start + count):
        out += [assistant(f"Calling tool {i}", f"tc_{i}"), tool(f"tc_{i}", f"Tool result {i}")]
    return out


def multi_turn(n_pairs: int = 3) -> list[Message]:
    """`[system, first user, n_pairs × (assistant, tool), last user]`."""
    return [SYSTEM, FIRST_USER, *pairs(n_pairs), LAST_USER]
