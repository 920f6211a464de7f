"""The MCP approval policy of a HITL agent (Heym §5.2, its heuristic pass): which MCP tools a
human must approve before they run, read from the system instruction and the HITL guidelines.

Each sentence or line is one segment. A segment that disables review ("do not ask",
"pre-approved", "no review", ...) gives `never`; one that asks once ("only once", "ask once",
"first time only", ...) gives `once`; one that asks for approval ("ask before", "requires
approval", "human review before", ...) gives `always`. A segment naming a tool sets that
tool's mode; one mentioning MCP sets the default. Modes are recorded with the tools when the
agent starts (`meta.approval`), so a replay sees the policy the run had.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from services.agent_runtime.tools.spec import ToolSpec

Mode = Literal["always", "once", "never"]

_DISABLES = (
    "do not ask",
    "don't ask",
    "dont ask",
    "pre-approved",
    "preapproved",
    "always approved",
    "no review",
    "no approval",
    "without approval",
    "without review",
    "never ask",
)
_ONCE = ("only once", "first time only", "ask once", "once per", "approve once", "just once")
_ENABLES = (
    "ask before",
    "requires approval",
    "require approval",
    "required approval",
    "needs approval",
    "need approval",
    "human review before",
    "approval before",
    "must be approved",
    "get approval",
    "ask for approval",
    "ask me before",
    "confirm before",
)
_SEGMENTS = re.compile(r"(?<=[.!?])\s+|\n+")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _mode(segment: str) -> Mode | None:
    lowered = segment.lower()
    if any(k in lowered for k in _DISABLES):
        return "never"
    if any(k in lowered for k in _ONCE):
        return "once"
    if any(k in lowered for k in _ENABLES):
        return "always"
    return None


def approval_modes(policy: str, tool_names: list[str]) -> dict[str, Mode]:
    """Each MCP tool's mode under `policy` (the default is `never`: no gate)."""
    default: Mode = "never"
    named: dict[str, Mode] = {}
    by_norm = {_norm(name): name for name in tool_names if _norm(name)}
    for segment in _SEGMENTS.split(policy):
        mode = _mode(segment)
        if mode is None:
            continue
        flat = _norm(segment)
        hits = [name for norm, name in by_norm.items() if norm in flat]
        for name in hits:
            named[name] = mode
        if not hits and "mcp" in segment.lower():
            default = mode
    return {name: named.get(name, default) for name in tool_names}


def scope_hint(modes: dict[str, Mode]) -> str:
    """The system prompt's note on the MCP tools and how approval applies to them."""
    names = ", ".join(sorted(modes))
    scope = "; ".join(f"{name}: {mode}" for name, mode in sorted(modes.items()))
    return (
        f"MCP tools available: {names}.\n"
        f"Interpreted MCP approval scope (always = a human approves every call, once = the "
        f"first call, never = no approval): {scope}. Calls that need approval pause for a "
        "human review by themselves; do not call request_human_review for them."
    )


def gate_mcp_tools(
    data: dict[str, Any], tools: list[ToolSpec], messages: list[dict[str, Any]]
) -> None:
    """For a HITL agent with MCP tools: each MCP tool's mode in its `meta.approval`, and the
    interpreted scope added to the system message (Heym §4.2 step 6.5)."""
    mcp = [t for t in tools if t.source == "mcp"]
    if not data.get("hitlEnabled") or not mcp:
        return
    policy = "\n".join(
        str(data.get(k) or "") for k in ("systemInstruction", "hitlSummary") if data.get(k)
    )
    modes = approval_modes(policy, [t.name for t in mcp])
    for spec in mcp:
        spec.meta = {**spec.meta, "approval": modes[spec.name]}
    hint = scope_hint(modes)
    if messages and messages[0].get("role") == "system":
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n{hint}"}
    else:
        messages.insert(0, {"role": "system", "content": hint})
