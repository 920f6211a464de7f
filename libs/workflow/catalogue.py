"""What each node type's `data` fields mean, for people and for the assistant's builder prompt.

Keyed by `contracts.workflows.NODE_TYPES`; `node_catalogue()` joins the two, and a unit test
fails when a node type has no entry here, so the builder prompt cannot silently miss one.
"""

from __future__ import annotations

from typing import Final

from contracts.workflows import NODE_TYPES, NodeType

# type -> (what it does, its data fields)
NODE_DOCS: Final[dict[str, tuple[str, str]]] = {
    "textInput": (
        "The run's input (webhook or manual). Its output is the request body's keys plus "
        "`headers`, `query` and `body`.",
        "inputFields: [{key, defaultValue?}] (the inputs a caller sends, default [{key:'text'}])",
    ),
    "cron": ("A scheduled trigger.", "cronExpression: cron string, e.g. '0 9 * * 1-5'"),
    "errorHandler": (
        "Roots the error flow: runs only when another node fails; output `{error:{node_label, "
        "message}}`.",
        "message?: template",
    ),
    "sticky": ("A note on the canvas; never runs.", "note: text"),
    "condition": (
        "Branches on a condition: source handles `true` / `false`.",
        "condition: expression, e.g. '$input.count > 3'",
    ),
    "switch": (
        "Branches on a value: source handles `case-0`, `case-1`, ... and `default`.",
        "expression: expression (default '$input.text'); cases: list of values",
    ),
    "merge": ("Waits for every connected branch and merges their outputs.", "(none)"),
    "loop": (
        "Runs its body once per item: source handle `loop` to the body, `done` after the last "
        "item; the body's last node connects back with targetHandle `loop`. Output `{item, "
        "index, total}` per iteration, `{results}` when done.",
        "arrayExpression: expression giving a list (default '$input')",
    ),
    "set": (
        "Builds an object from mappings.",
        "mappings: [{key, value}] (value: template or expression)",
    ),
    "variable": (
        "Sets a run variable read as `$vars.name`.",
        "variableName; variableValue: expression; variableType?: auto|string|number|boolean|"
        "array|object",
    ),
    "jsonOutputMapper": (
        "Like set: shapes an object (an end node; not inside a loop body).",
        "mappings: [{key, value}]",
    ),
    "output": (
        "A run result, keyed by the node's label in the run's outputs (not inside a loop body).",
        "message?: template or expression; outputSchema?: [{key, value}]; allowDownstream?: bool",
    ),
    "consoleLog": ("Logs a message and passes its input on.", "logMessage: template"),
    "throwError": (
        "Fails the run with a message and an HTTP status.",
        "errorMessage: template; httpStatusCode?: number (default 500)",
    ),
    "disableNode": (
        "Disables another node for the rest of this run.",
        "targetNodeLabel: the label of the node to disable",
    ),
    "wait": ("Waits, as a durable timer.", "duration: milliseconds (default 1000)"),
    "execute": (
        "Runs another of the user's workflows (a sub-workflow) and outputs its result.",
        "executeWorkflowId: workflow id; executeInputMappings?: [{key, value}] or "
        "executeInput?: expression; executeDoNotWait?: bool",
    ),
    "http": (
        "Makes an HTTP request described as a cURL command; output `{status, headers, body}`.",
        "curl: e.g. curl -X POST https://api.example.com/x -H 'Content-Type: application/json' "
        '-d \'{"q": "$input.text"}\'',
    ),
    "a2a": (
        "Sends a message to a remote A2A 1.0 agent (another Heym Agent or any A2A server) and "
        "outputs its answer `{state, text, data, task_id, context_id, input_required, "
        "status_message, artifacts, steps, agent}`. INPUT_REQUIRED and AUTH_REQUIRED are "
        "outputs (`input_required: true`; answer with `taskId`); FAILED, REJECTED and "
        "CANCELED fail the node.",
        "agentUrl: the agent's base URL (card at /.well-known/agent-card.json) or its card's "
        "URL; message?: template (default '$input.text'); credentialId?: a stored credential "
        "whose key is sent; authHeader?: X-MCP-Key (default) | Authorization (Bearer); mode?: "
        "blocking (default) | streaming | polling; taskId?, contextId?: templates to continue a "
        "task or conversation; timeoutSeconds? (120, at most 900)",
    ),
    "llm": (
        "One model call; output `{text, model, usage}` (or the JSON object with "
        "jsonOutputEnabled).",
        "credentialId; model; systemInstruction?: template; userMessage?: template (default "
        "'$input.text'); temperature?; maxTokens?; jsonOutputEnabled?; jsonOutputSchema?",
    ),
    "agent": (
        "An LLM tool loop; tools are canvas nodes wired to its `tool-input` handle, "
        "sub-workflows and sub-agents; output `{text, model, tool_calls}`.",
        "credentialId; model; systemInstruction?; userMessage?; maxToolIterations? (30); "
        "subWorkflowIds?: [workflow id]; isOrchestrator? + subAgentLabels?: [label]; "
        "a2aAgents?: [{name, agentUrl, description?, credentialId?, authHeader?, mode?, "
        "timeoutSeconds?}] (remote A2A agents, each a tool `a2a_<name>`)",
    ),
}


def node_catalogue() -> list[tuple[NodeType, str, str]]:
    """Every node type with what it does and its fields, in catalogue order."""
    out: list[tuple[NodeType, str, str]] = []
    for name, node_type in NODE_TYPES.items():
        summary, fields = NODE_DOCS.get(name, (node_type.description, ""))
        out.append((node_type, summary, fields))
    return out


def undocumented() -> list[str]:
    return [name for name in NODE_TYPES if name not in NODE_DOCS]
