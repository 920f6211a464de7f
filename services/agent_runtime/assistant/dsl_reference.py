"""The workflow DSL reference the builder reads (Heym §12.4), generated from the code: the node
catalogue from `contracts.workflows` + `libs.workflow.catalogue`, handles from the contract's
constants, the expression vocabulary from the evaluator's own registries.

The clarify protocol is kept out of it on purpose (Heym keeps it separate too)."""

from __future__ import annotations

from functools import cache

from contracts import workflows as wf
from libs.expressions import vocabulary
from libs.workflow.catalogue import node_catalogue

RESERVED_LABELS = (
    "input",
    "vars",
    "global",
    "now",
    "credentials",
    "result",
    "results",
    "item",
    "null",
    "true",
    "false",
    "undefined",
    "None",
)


@cache
def dsl_reference() -> str:
    lines = [
        "# Heym workflow DSL",
        "Answer with exactly one fenced ```json block holding "
        '{"name", "description", "nodes": [...], "edges": [...]}.',
        '- Node: {"id", "type", "position": {"x", "y"}, "data": {"label", ...type fields}}.',
        '- Edge: {"id", "source", "target", "sourceHandle"?, "targetHandle"?}.',
        f"- Source handles: condition `{wf.HANDLE_TRUE}`/`{wf.HANDLE_FALSE}`; switch `case-N`/"
        f"`default`; loop `{wf.HANDLE_LOOP}`/`{wf.HANDLE_DONE}` plus a back edge into "
        f"targetHandle `{wf.TARGET_LOOP}`; any node `{wf.HANDLE_ERROR}` for its error branch "
        f"(with data.onErrorEnabled true).",
        f"- Agent tools: a node wired into an agent with targetHandle `{wf.TARGET_TOOL_INPUT}` "
        "is one of the agent's tools.",
        "- Labels are unique and camelCase; these names are reserved and cannot be labels: "
        + ", ".join(RESERVED_LABELS)
        + ".",
        "- Expressions reference earlier nodes by label: `$label.field` (e.g. "
        "`$userInput.text`, `$fetchOrders.body.items`); `$vars.name` reads run variables; "
        "`$now` is the current time. Do not use `$input` in a workflow you write: name the "
        "node.",
        "- Templates mix text and expressions: 'Hello $userInput.name!'.",
        "- `output` and `jsonOutputMapper` nodes may not sit inside a loop body.",
        "- Layout: about 250-300 px per step from left to right; a loop body goes above the "
        "main row.",
        "- Keep existing ids, credentialId and model values when you change a workflow. Use "
        "textInput nodes for values a caller provides at run time; never guess URLs: add a "
        "step that finds them.",
        f"- Sub-workflows nest at most {wf.MAX_SUB_WORKFLOW_DEPTH} deep.",
        "",
        "## Node types",
    ]
    for node_type, summary, fields in node_catalogue():
        required = f" Required: {', '.join(node_type.required)}." if node_type.required else ""
        lines.append(f"- `{node_type.name}`: {summary}{required} Fields: {fields}")
    lines += ["", "## Expression functions and methods"]
    for group, names in vocabulary().items():
        lines.append(f"- {group}: {', '.join(names)}")
    return "\n".join(lines)
