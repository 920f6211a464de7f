"""Pure compression planning (Heym §4.7): the token estimate, the anchors and the rebuild."""

from __future__ import annotations

import json
from typing import Any

import msgspec

Message = dict[str, Any]

THRESHOLD = 0.80
SINGLE_TURN_TAIL = 4


class Plan(msgspec.Struct, frozen=True):
    """What to compress, by index into the original messages, so a recorded summary can be
    replayed onto the same messages: keep `first_user_index`, replace `middle` with the
    summary, keep everything from `tail_start_index` on (the kept system message aside)."""

    first_user_index: int
    tail_start_index: int
    middle: list[Message]
    tokens_before: int


def estimate_tokens(messages: list[Message]) -> int:
    """Heym's tokenizer-free estimate: four characters of JSON per token."""
    # default=str as in Heym: the figure is identical for JSON values and a stray non-JSON
    # value must not make the estimate (and so the agent turn) raise.
    return sum(len(json.dumps(m, default=str)) for m in messages) // 4


def _system_index(messages: list[Message]) -> int | None:
    return next((i for i, m in enumerate(messages) if m.get("role") == "system"), None)


def _tool_call_ids(message: Message) -> set[str]:
    if message.get("role") != "assistant" or not isinstance(message.get("tool_calls"), list):
        return set()
    return {
        c["id"]
        for c in message["tool_calls"]
        if isinstance(c, dict) and isinstance(c.get("id"), str)
    }


def _safe_tail_start(messages: list[Message], rest: list[int], low: int, pos: int) -> int:
    """Move the single-turn tail start (a position in `rest`) back until no `tool` message in
    the tail answers an assistant turn that would be summarised away (Heym quirk 7: providers
    reject a `tool` message whose `tool_calls` turn is missing). `low` bounds the walk."""
    while pos > low:
        if messages[rest[pos]].get("role") == "tool":
            pos -= 1
            continue
        answered = {
            messages[i].get("tool_call_id") for i in rest[pos:] if messages[i].get("role") == "tool"
        }
        owner = next(
            (p for p in range(low, pos) if _tool_call_ids(messages[rest[p]]) & answered), None
        )
        if owner is None:
            break
        pos = owner
    return pos


def _between(messages: list[Message], start: int, stop: int) -> list[Message]:
    skip = _system_index(messages)
    return [messages[i] for i in range(start, stop) if i != skip]


def plan_at(messages: list[Message], first_user_index: int, tail_start_index: int) -> Plan:
    """The plan for recorded indices (replay); raises ValueError if they do not fit."""
    fits = 0 <= first_user_index < tail_start_index < len(messages)
    if not fits or messages[first_user_index].get("role") != "user":
        raise ValueError(
            f"compression indices {first_user_index}/{tail_start_index} do not fit "
            f"{len(messages)} messages"
        )
    middle = _between(messages, first_user_index + 1, tail_start_index)
    return Plan(first_user_index, tail_start_index, middle, estimate_tokens(messages))


def plan_compression(messages: list[Message], limit: int) -> Plan | None:
    """What to compress, or None when the estimate is below 80 % of `limit` or nothing fits."""
    tokens_before = estimate_tokens(messages)
    if tokens_before < THRESHOLD * limit:
        return None
    system = _system_index(messages)
    # Positions below are into `rest`: the messages other than the kept system message.
    rest = [i for i in range(len(messages)) if i != system]
    users = [p for p, i in enumerate(rest) if messages[i].get("role") == "user"]
    if not users:
        return None
    first = users[0]
    if len(users) >= 2:
        tail = users[-1]
    elif len(rest) - (first + 1) <= SINGLE_TURN_TAIL:
        return None
    else:
        tail = _safe_tail_start(messages, rest, first + 1, len(rest) - SINGLE_TURN_TAIL)
    if tail <= first + 1:
        return None
    middle = [messages[i] for i in rest[first + 1 : tail]]
    return Plan(rest[first], rest[tail], middle, tokens_before)


def summary_message(count: int, summary: str) -> Message:
    return {
        "role": "assistant",
        "content": f"[Context compressed — {count} messages summarized]\n{summary}",
    }


def apply_compression(messages: list[Message], plan: Plan, summary: str) -> list[Message]:
    """`[system?, first user, assistant summary, *tail]`; pure, so replaying a recorded
    summary with the recorded plan yields the same messages."""
    # As in Heym, non-system messages before the first user message are not carried over.
    system = _system_index(messages)
    head = [] if system is None else [messages[system]]
    tail = [m for i, m in enumerate(messages) if i >= plan.tail_start_index and i != system]
    first_user = messages[plan.first_user_index]
    return [*head, first_user, summary_message(len(plan.middle), summary), *tail]
