"""Workflows and model scripts the inspector's browser tests run (the model is scripted)."""

from __future__ import annotations

from typing import Any

from libs.testing.model_server import ChatRequest, Match, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, e, n

PLANNER_MODEL = "small-window-model"
HELPER_MODEL = "helper-model"


def _compressed(r: ChatRequest) -> bool:
    return any("[Context compressed" in str(m.get("content")) for m in r.messages)


def _summarising(r: ChatRequest) -> bool:
    return bool(r.messages) and "summarising part of an AI agent" in str(
        r.messages[0].get("content")
    )


def planner_script() -> Script:
    """The planner asks its sub-agent first, then reads pages until its small context window
    has been compressed once, then answers; the helper answers at once."""
    return Script(
        context_windows={PLANNER_MODEL: 2000},
        rules=[
            Rule(name="summary", when=Match(predicate=_summarising), reply=Reply(text="SUMMARY")),
            Rule(
                name="helper",
                when=Match(model=HELPER_MODEL),
                reply=Reply(text="The facts hold.", delay=0.2),
            ),
            Rule(
                name="delegate",
                when=Match(
                    model=PLANNER_MODEL, assistant_turns=0, predicate=lambda r: not _compressed(r)
                ),
                reply=Reply(
                    tool_calls=[
                        ToolCall(
                            "call_sub_agent",
                            {"sub_agent_label": "helper", "prompt": "Check the facts"},
                        )
                    ]
                ),
            ),
            Rule(
                name="read",
                when=Match(
                    model=PLANNER_MODEL,
                    tool_offered="fetch_page",
                    predicate=lambda r: not _compressed(r),
                ),
                reply=Reply(tool_calls=[ToolCall("fetch_page", {})]),
            ),
            Rule(name="done", when=Match(model=PLANNER_MODEL), reply=Reply(text="All read.")),
        ],
    )


def parallel_agent_workflow(cred: str, slow_url: str) -> tuple[list[Any], list[Any]]:
    """Two branches from the input at once: a slow HTTP call, and an orchestrating agent
    with a sub-agent and a page-reading tool (whose results fill its context)."""
    nodes = [
        n("in", "textInput", "request"),
        n("slow", "http", "slowApi", curl=f"curl {slow_url}"),
        agent(
            "plan",
            "planner",
            cred,
            model=PLANNER_MODEL,
            isOrchestrator=True,
            subAgentLabels=["helper"],
            userMessage="$request.text",
        ),
        agent("help", "helper", cred, model=HELPER_MODEL, userMessage="$input.text"),
        n("page", "set", "Fetch Page", mappings=[{"key": "page", "value": "lorem ipsum " * 150}]),
        n("o1", "output", "api", message="$slowApi.body.delayed_ms"),
        n("o2", "output", "plan", message="$planner.text"),
    ]
    edges = [
        e("in", "slow"),
        e("in", "plan"),
        e("slow", "o1"),
        e("plan", "o2"),
        e("plan", "help", source_handle="sub-agents", target_handle="sub-agent-input"),
        e("page", "plan", target_handle="tool-input"),
    ]
    return nodes, edges
