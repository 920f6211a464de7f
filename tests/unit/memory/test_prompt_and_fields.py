"""Memory in the prompt (Heym §7 bounds) and the save-time checks of agent fields."""

from __future__ import annotations

from typing import Any

import pytest

from libs.workflow import validate_workflow
from services.agent_runtime.memory.prompt import (
    MAX_CHARS,
    graph_markdown,
    own_block,
    shared_block,
    with_memory,
)

pytestmark = pytest.mark.unit


def entity(i: int, **props: Any) -> dict[str, Any]:
    return {"id": f"e{i}", "entity_name": f"E{i}", "entity_type": "topic", "properties": props}


def test_entities_and_relationships_render_as_markdown() -> None:
    text = graph_markdown(
        [entity(1, city="London"), entity(2)],
        [{"source_id": "e1", "target_id": "e2", "relationship_type": "likes"}],
    )
    assert text is not None
    assert '**Entities:**\n- E1 (topic) — {"city": "London"}\n- E2 (topic)' in text
    assert "**Relationships:**\n- E1 —[likes]→ E2" in text
    assert graph_markdown([], []) is None


def test_a_large_graph_is_cut_at_16000_characters() -> None:
    text = graph_markdown([entity(i, note="x" * 500) for i in range(100)], [])
    assert text is not None
    assert len(text) <= MAX_CHARS
    assert text.endswith("… (truncated)")


def test_blocks_go_at_the_end_of_the_system_prompt() -> None:
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    out = with_memory(msgs, [own_block("- A"), shared_block("peer", "read", "- B")])
    assert out[0]["content"].startswith("Be brief.\n\n### Persistent memory")
    assert "### Shared agent memory (from `peer`, read-only)" in out[0]["content"]
    assert msgs[0]["content"] == "Be brief."  # not changed in place
    assert with_memory([{"role": "user", "content": "hi"}], ["M"])[0] == {
        "role": "system",
        "content": "M",
    }
    assert "read/write" in shared_block("peer", "write", "- B")


def agent(nid: str, **data: Any) -> dict[str, Any]:
    return {"id": nid, "type": "agent", "data": {"label": nid, **data}}


def codes(nodes: list[dict[str, Any]]) -> list[str]:
    return [i.code for i in validate_workflow(nodes, [])]


def test_guardrails_on_need_their_credential_and_model() -> None:
    assert codes([agent("a", guardrailsEnabled=True)]) == ["guardrail_config", "guardrail_config"]
    ok = agent("a", guardrailsEnabled=True, guardrailCredentialId="c", guardrailModel="m")
    assert codes([ok]) == []
    assert codes([agent("a", guardrailsEnabled=False)]) == []


def test_unknown_guardrail_categories_and_severity_are_refused() -> None:
    bad = agent("a", guardrailsCategories=["violence", "rudeness"], guardrailsSeverity="extreme")
    assert codes([bad]) == ["guardrail_categories", "guardrail_severity"]


def test_memory_shares_must_name_an_existing_node_and_a_permission() -> None:
    good = agent("a", memoryShares=[{"peerCanvasNodeId": "b", "permission": "write"}])
    assert codes([good, agent("b")]) == []
    assert codes([agent("a", memoryShares=[{"peerCanvasNodeId": "zz"}])]) == ["memory_share"]
    not_agent = {"id": "s", "type": "set", "data": {"label": "s"}}
    assert codes([agent("a", memoryShares=[{"peerCanvasNodeId": "s"}]), not_agent]) == [
        "memory_share"
    ]
    assert codes([agent("a", memoryShares=[{"peerCanvasNodeId": "a"}])]) == ["memory_share"]
    bad_perm = agent("a", memoryShares=[{"peerCanvasNodeId": "b", "permission": "admin"}])
    assert codes([bad_perm, agent("b")]) == ["memory_share"]
    assert codes([agent("a", memoryShares="b")]) == ["memory_share"]
    other_workflow = agent("a", memoryShares=[{"peerWorkflowId": "w2", "peerCanvasNodeId": "x"}])
    assert codes([other_workflow]) == []  # checked against the database by the gateway
