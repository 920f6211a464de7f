"""The tools an agent offers its model, in Heym's order (§4.2 item 6), by source.

Later tools win over earlier ones with the same name, as in Heym (looked up by name).
"""

from __future__ import annotations

import json
import re
from typing import Any

from contracts.workflows import TARGET_TOOL_INPUT
from libs.a2a.remote import remote_agents
from libs.a2a.remote import tool_name as a2a_tool_name
from libs.tools.agent_tools import mcp_call_meta
from services.agent_runtime.call import AgentCall
from services.agent_runtime.tools.review import review_tool
from services.agent_runtime.tools.spec import ToolSpec, object_schema

_TERMINAL_MAPPERS = {"jsonOutputMapper", "htmlOutputMapper"}


def _parameters(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raw = {}
    if not isinstance(raw, dict) or not raw:
        return object_schema({})
    return raw


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "tool"


def build_tools(
    call: AgentCall,
    *,
    skills: Any = None,
    mcp_tools: list[dict[str, Any]] | None = None,
) -> list[ToolSpec]:
    """`skills` overrides the node's (stored ones resolved); `mcp_tools` as listed by
    `libs.tools.agent_tools.list_mcp_tools`."""
    data = call.data
    tools: list[ToolSpec] = []
    for t in data.get("tools") or []:
        if isinstance(t, dict) and t.get("name"):
            tools.append(
                ToolSpec(
                    name=str(t["name"]),
                    source="python",
                    description=str(t.get("description") or ""),
                    parameters=_parameters(t.get("parameters")),
                    meta={"code": t.get("code", "")},
                )
            )
    if data.get("hitlEnabled"):
        tools.append(review_tool())
    for skill in (data.get("skills") if skills is None else skills) or []:
        if not isinstance(skill, dict):
            continue
        files = skill.get("files") or []
        if any(isinstance(f, dict) and str(f.get("path", "")).endswith(".py") for f in files):
            name = "skill_" + str(skill.get("name", "skill")).lower().replace(" ", "_")
            tools.append(
                ToolSpec(
                    name=name,
                    source="skill",
                    description=f"Run the {skill.get('name')} skill.",
                    parameters=object_schema({"input": {"type": "string"}}, ["input"]),
                    meta={"skill": skill},
                )
            )
    for tool in mcp_tools or []:  # §4.2 step 6.4, after the skills
        tools.append(
            ToolSpec(
                name=str(tool.get("name")),
                source="mcp",
                description=str(tool.get("description") or ""),
                parameters=_parameters(tool.get("parameters")),
                meta=mcp_call_meta(tool),
            )
        )
    tools.extend(_a2a_tools(data))
    tools.extend(_node_tools(call))
    labels = [str(x) for x in data.get("subAgentLabels") or []]
    if data.get("isOrchestrator") and labels:
        tools.append(
            ToolSpec(
                name="call_sub_agent",
                source="sub_agent",
                description=(
                    "Delegate a task to a sub-agent. When a request needs several sub-agents, "
                    "call all of them in the same turn: they run in parallel."
                ),
                parameters=object_schema(
                    {
                        "sub_agent_label": {"type": "string", "enum": labels},
                        "prompt": {
                            "type": "string",
                            "description": "What the sub-agent should do.",
                        },
                    },
                    ["sub_agent_label", "prompt"],
                ),
            )
        )
    allowed = [str(w) for w in data.get("subWorkflowIds") or [] if str(w) in call.sub_workflows]
    if allowed:
        lines = []
        for wid in allowed:
            snap = call.sub_workflows[wid]
            keys = _input_keys(snap.nodes) or ["text"]
            lines.append(f"{snap.name} ({wid}) expects inputs: {{{', '.join(keys)}}}")
        tools.append(
            ToolSpec(
                name="call_sub_workflow",
                source="sub_workflow",
                description="Run another workflow and get its outputs.\n" + "\n".join(lines),
                parameters=object_schema(
                    {
                        "workflow_id": {"type": "string", "enum": allowed},
                        "inputs": {"type": "object"},
                    },
                    ["workflow_id", "inputs"],
                ),
            )
        )
    by_name: dict[str, ToolSpec] = {}
    for spec in tools:
        by_name[spec.name] = spec  # the last definition of a name wins
    return list(by_name.values())


def _input_keys(nodes: list[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    for node in nodes:
        if node.get("type") == "textInput":
            for f in (node.get("data") or {}).get("inputFields") or []:
                if isinstance(f, dict) and f.get("key"):
                    keys.append(str(f["key"]))
    return keys


def _a2a_tools(data: dict[str, Any]) -> list[ToolSpec]:
    """Remote A2A agents (`a2aAgents`): one tool each, run by the tool sandbox."""
    specs = []
    for agent in remote_agents(data.get("a2aAgents")):
        about = agent.description or f"the remote A2A agent {agent.name!r}"
        specs.append(
            ToolSpec(
                name=a2a_tool_name(agent.name),
                source="a2a",
                description=(
                    f"Send a message to {about} and get its answer (state, text, task_id, "
                    "context_id). When the state is INPUT_REQUIRED, answer its question with "
                    "task_id set; pass context_id to continue the same conversation."
                ),
                parameters=object_schema(
                    {
                        "message": {"type": "string", "description": "What to ask or tell it."},
                        "task_id": {
                            "type": "string",
                            "description": "The task to continue (after INPUT_REQUIRED).",
                        },
                        "context_id": {
                            "type": "string",
                            "description": "The conversation to continue.",
                        },
                    },
                    ["message"],
                ),
                meta={"agent": agent.as_meta()},
            )
        )
    return specs


def _node_tools(call: AgentCall) -> list[ToolSpec]:
    """Canvas nodes wired to this agent's `tool-input` handle (§4.6)."""
    if call.workflow is None:
        return []
    nodes = {n.get("id"): n for n in call.workflow.nodes if isinstance(n, dict)}
    specs: list[ToolSpec] = []
    used: dict[str, int] = {}
    for edge in call.workflow.edges:
        if edge.get("target") != call.node_id or edge.get("targetHandle") != TARGET_TOOL_INPUT:
            continue
        node = nodes.get(edge.get("source"))
        if node is None or node.get("type") in _TERMINAL_MAPPERS:
            continue
        data = node.get("data") or {}
        label = str(data.get("label") or node.get("id"))
        base = slug(label)
        used[base] = used.get(base, 0) + 1
        name = base if used[base] == 1 else f"{base}_{used[base]}"
        fields = [str(f) for f in data.get("agentProvidedFields") or []]
        specs.append(
            ToolSpec(
                name=name,
                source="node_tool",
                description=str(
                    data.get("toolDescription") or f"Run the {label!r} node ({node.get('type')})."
                ),
                parameters=object_schema(
                    {f: {"description": f"value for {f}"} for f in fields}, fields
                ),
                meta={"node": node},
            )
        )
    return specs
