"""Planning and rebuilding: the estimate, the 80 % threshold, the anchors and quirk 7."""

from __future__ import annotations

import copy
import json

import pytest

from services.agent_runtime.compression import (
    SINGLE_TURN_TAIL,
    Plan,
    apply_compression,
    estimate_tokens,
    plan_at,
    plan_compression,
)
from tests.unit.agent_compression._messages import (
    FIRST_USER,
    LAST_USER,
    SYSTEM,
    Message,
    assistant,
    multi_turn,
    pairs,
    tool,
)

pytestmark = pytest.mark.unit

ALWAYS = 1  # a limit so small that any conversation is above 80 % of it


def test_estimate_is_json_characters_over_four() -> None:
    message = {"role": "user", "content": "hi"}
    assert estimate_tokens([message]) == len('{"role": "user", "content": "hi"}') // 4 == 8
    assert estimate_tokens([]) == 0
    # The sum of characters is divided once, not each message.
    assert estimate_tokens([message, message]) == (2 * 33) // 4 == 16
    # Non-ASCII is escaped as json.dumps does by default, as in Heym.
    assert estimate_tokens([{"c": "é"}]) == len('{"c": "\\u00e9"}') // 4


def _sized(tokens: int) -> list[Message]:
    """A multi-turn conversation whose estimate is exactly `tokens`."""
    messages = multi_turn()
    pad = 4 * tokens - 4 * estimate_tokens(messages)
    messages[2] = {**messages[2], "content": messages[2]["content"] + "x" * pad}
    assert estimate_tokens(messages) == tokens
    return messages


def test_threshold_is_eighty_percent_inclusive() -> None:
    # estimate < 0.8 × limit skips; exactly 0.8 × limit compresses.
    assert plan_compression(_sized(799), limit=1000) is None
    assert plan_compression(_sized(800), limit=1000) is not None
    assert plan_compression(_sized(10_000), limit=1000) is not None


def test_multi_turn_middle_is_strictly_between_first_and_last_user() -> None:
    messages = [*multi_turn(3), assistant("done")]
    plan = plan_compression(messages, ALWAYS)
    assert plan == Plan(1, 8, messages[2:8], estimate_tokens(messages))
    result = apply_compression(messages, plan, "S")
    assert result == [
        SYSTEM,
        FIRST_USER,
        {"role": "assistant", "content": "[Context compressed — 6 messages summarized]\nS"},
        LAST_USER,
        assistant("done"),
    ]


def test_seed_shape_system_first_summary_last() -> None:
    messages = multi_turn(1)
    plan = plan_compression(messages, ALWAYS)
    assert plan is not None
    result = apply_compression(messages, plan, "summary")
    assert [m["role"] for m in result] == ["system", "user", "assistant", "user"]
    assert result[0] is SYSTEM
    assert result[1] is FIRST_USER
    assert result[3] is LAST_USER
    assert result[2]["content"].startswith("[Context compressed — 2 messages summarized]\n")


def test_no_system_message() -> None:
    messages = multi_turn(2)[1:]
    plan = plan_compression(messages, ALWAYS)
    assert plan is not None
    assert (plan.first_user_index, plan.tail_start_index) == (0, 5)
    result = apply_compression(messages, plan, "S")
    assert [m["role"] for m in result] == ["user", "assistant", "user"]


@pytest.mark.parametrize(
    "messages",
    [
        [SYSTEM, FIRST_USER],
        [SYSTEM, assistant("a"), tool("x", "y")],  # no user message
        [SYSTEM, FIRST_USER, LAST_USER],  # two users, empty middle
        [SYSTEM, FIRST_USER, assistant("Assistant reply.")],
        [SYSTEM, FIRST_USER, *pairs(2)],  # exactly 4 after the single user
    ],
    ids=["only-anchors", "no-user", "adjacent-users", "one-reply", "four-after-user"],
)
def test_nothing_to_compress(messages: list[Message]) -> None:
    assert plan_compression(messages, ALWAYS) is None


def test_single_turn_twelve_tool_loop_messages_keep_the_last_four() -> None:
    # Heym's case: six assistant/tool iterations after one user message.
    messages = [SYSTEM, FIRST_USER, *pairs(6)]
    plan = plan_compression(messages, ALWAYS)
    assert plan is not None
    assert plan.middle == messages[2:10]
    assert plan.tail_start_index == 10
    result = apply_compression(messages, plan, "Tools 0-3 ran successfully.")
    assert len(result) == 3 + SINGLE_TURN_TAIL
    assert result[:2] == [SYSTEM, FIRST_USER]
    assert result[3:] == messages[-4:]
    assert result[2]["role"] == "assistant"
    assert "[Context compressed — 8 messages summarized]" in result[2]["content"]


def _orphans(messages: list[Message]) -> list[str]:
    """tool_call_ids in `messages` with no earlier assistant turn that made the call."""
    made: set[str] = set()
    missing: list[str] = []
    for m in messages:
        for call in m.get("tool_calls", []):
            made.add(call["id"])
        if m["role"] == "tool" and m["tool_call_id"] not in made:
            missing.append(m["tool_call_id"])
    return missing


def test_quirk_7_the_tail_takes_the_assistant_turn_of_its_tool_messages() -> None:
    # Heym's tail of 4 would be [tool(tc_1), assistant(tc_2), tool(tc_2), tool(tc_2b)].
    messages = [
        SYSTEM,
        FIRST_USER,
        *pairs(2),
        assistant("two calls", "tc_2", "tc_2b"),
        tool("tc_2", "r2"),
        tool("tc_2b", "r2b"),
    ]
    plan = plan_compression(messages, ALWAYS)
    assert plan is not None
    assert plan.tail_start_index == 4
    assert plan.middle == messages[2:4]
    result = apply_compression(messages, plan, "S")
    assert result[3:] == messages[4:]
    assert _orphans(result) == []


def test_quirk_7_parallel_calls_longer_than_the_tail() -> None:
    calls = [f"c{i}" for i in range(4)]
    messages = [
        SYSTEM,
        FIRST_USER,
        *pairs(1),
        assistant("fan out", *calls),
        *(tool(c, c) for c in calls),
    ]
    plan = plan_compression(messages, ALWAYS)
    assert plan is not None
    assert plan.tail_start_index == 4
    assert len(plan.middle) == 2
    assert _orphans(apply_compression(messages, plan, "S")) == []


def test_quirk_7_no_middle_left_means_no_compression() -> None:
    calls = [f"c{i}" for i in range(5)]
    messages = [SYSTEM, FIRST_USER, assistant("fan out", *calls), *(tool(c, c) for c in calls)]
    assert plan_compression(messages, ALWAYS) is None


def test_quirk_7_a_tool_answer_after_an_intervening_assistant_turn() -> None:
    # The tail starts with an assistant message, but a tool message inside it answers an
    # earlier call: that call's turn is pulled into the tail too.
    messages = [
        SYSTEM,
        FIRST_USER,
        assistant("n0"),
        assistant("n1"),
        assistant("two calls", "k1", "k2"),
        tool("k1", "r1"),
        assistant("thinking"),
        tool("k2", "r2"),
        assistant("n_last"),
        assistant("x"),
    ]
    plan = plan_compression(messages, ALWAYS)
    assert plan is not None
    assert plan.tail_start_index == 4
    assert plan.middle == messages[2:4]
    assert _orphans(apply_compression(messages, plan, "S")) == []


def test_messages_before_the_first_user_are_not_carried_over() -> None:
    greeting = assistant("Hi! How can I help?")
    messages = [SYSTEM, greeting, *multi_turn(2)[1:]]
    plan = plan_compression(messages, ALWAYS)
    assert plan is not None
    assert plan.first_user_index == 2
    result = apply_compression(messages, plan, "S")
    assert greeting not in result
    assert result[:2] == [SYSTEM, FIRST_USER]


def test_apply_is_pure_and_replays_from_recorded_indices() -> None:
    messages = [SYSTEM, FIRST_USER, *pairs(6)]
    snapshot = copy.deepcopy(messages)
    plan = plan_compression(messages, ALWAYS)
    assert plan is not None
    first = apply_compression(messages, plan, "recorded summary")
    assert messages == snapshot
    # A replay only has the recorded indices and summary, and messages rebuilt from the log.
    rebuilt = json.loads(json.dumps(messages))
    replayed = plan_at(rebuilt, plan.first_user_index, plan.tail_start_index)
    assert replayed == plan
    assert apply_compression(rebuilt, replayed, "recorded summary") == first


@pytest.mark.parametrize("indices", [(0, 3), (1, 1), (1, 99), (-1, 3)])
def test_plan_at_rejects_indices_that_do_not_fit(indices: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="do not fit"):
        plan_at(multi_turn(2), *indices)
