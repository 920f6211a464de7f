"""The assistant's instructions (Heym §12.7.2, §12.8, §12.5), written for this project: pure
text and the functions that lay out a turn's system prompt in Heym's order."""

from __future__ import annotations

import json
from typing import Any

from contracts.chat import MAX_BUILD_TEST_RUNS
from services.agent_runtime.assistant.dsl_reference import dsl_reference

BASE_PROMPT = """You are the Heym Agent, the assistant inside Heym, an AI-workflow engine. You act \
on the signed-in user's account through your tools.

Rules:
- Answer in the user's language.
- Workflow first: before saying you cannot do something, look for one of the user's workflows \
that can (list_workflows) and run it (execute_workflow). Report what it returned.
- Research before creating: read existing workflows and the documentation before you build.
- Build only Heym-native solutions; never suggest other platforms or tools.
- Never invent data, ids, results or URLs. When a tool fails, say so and give its error.
- Keep answers short and concrete. Link a workflow as [name](/workflows/<id>).

You can: list, read and run workflows and report their outputs; follow a running execution; \
read run history, active runs and analytics; search Heym's documentation; build new \
workflows and change existing ones from a description."""

CLARIFY_PROTOCOL = """When a request is ambiguous (which trigger, data source, output, \
credential, or a routing choice), do not build yet. Reply with one short sentence and one \
fenced block, then stop:
```heym-clarify
{"questions": [{"id": "q1", "text": "...", "type": "single|multi|text", \
"options": ["..."], "allowOther": true, "optional": false}]}
```
Ask at most 3-4 questions. The user answers in a message that starts with `[Plan answers]`, \
one `- <question> → <answer>` line each (`Other: "..."` for free text, `(skipped)` for an \
optional question left blank); continue from those answers."""


def build_mode_section(target: dict[str, Any] | None) -> str:
    lines = [
        "## Build mode",
        "You build the workflow yourself: write the complete DSL and save it with "
        "save_workflow, test it with run_workflow_test (a real run: side effects happen), "
        "then call finish with a short summary.",
        f"- You have {MAX_BUILD_TEST_RUNS} test runs in this turn "
        "(`Testing the workflow · attempt n/5`).",
        "- Compare every test report with the request. Never finish after a failed or wrong "
        "run; finish is refused until the latest save has a passing run.",
        "- Fix only what the report shows is wrong, and save the complete workflow again.",
        "- A save that fails validation returns the problems: fix them and save again.",
        "- When the test budget is spent, report what still fails and what you would change.",
        "- Ask with a heym-clarify block when you need the user.",
    ]
    if target is not None:
        lines += [
            "",
            "## Current workflow (keep ids, credentials and models)",
            "```json",
            json.dumps(target, default=str)[:60_000],
            "```",
        ]
    return "\n".join([*lines, "", dsl_reference()])


def workflows_section(workflows: list[dict[str, Any]]) -> str:
    lines = ["## Available workflows"]
    if not workflows:
        lines.append("(none yet)")
    for w in workflows:
        desc = (w.get("description") or "").replace("\n", " ")[:200]
        keys = ", ".join(w.get("input_fields") or []) or "text"
        lines.append(f"- {w['name']} (id {w['id']}): {desc or 'no description'}; inputs: {keys}")
    return "\n".join(lines)


def credentials_section(credentials: list[dict[str, Any]], *, ask: bool = True) -> str:
    """The user's credentials; `ask` (Heym's ASK_AND_CREATE) explains how to ask for a
    missing one, otherwise (APPLY_CHOICES, the builder) the choices given are applied."""
    how = (
        "When a new node needs a credential the user does not have, ask with a single-choice "
        "heym-clarify question per service whose options are the existing credentials, a "
        'create option {"label", "create": {"type", "name"}}, and "continue without a '
        'credential".'
        if ask
        else "Use the credentials named in the credential choices given; never invent one."
    )
    lines = [
        "## Credentials",
        "The user's credentials (names, types and ids only; you never see their values). An "
        "llm or agent node you build uses the chat's own model credential unless the user "
        "picks another. " + how,
    ]
    for c in credentials:
        lines.append(f"- {c['name']} ({c['type']}, id {c['id']})")
    if not credentials:
        lines.append("(none)")
    return "\n".join(lines)


def attachment_section(attachment: dict[str, Any]) -> str:
    kind = attachment.get("kind")
    name = attachment.get("name") or "attachment"
    if kind == "image":
        return (
            f"## Attachment\nThe user attached an image ({name}). You cannot see it; when you "
            "run a workflow, the image is passed into its image input field (a key containing "
            "image, base64, photo, picture or img), else its first input."
        )
    return (
        f"## Attachment\nThe user attached {name}; its text is in the message. When you run a "
        "workflow, it goes into its text/document/content/file/data input, else its first input."
    )


def system_prompt(
    *,
    workflows: list[dict[str, Any]],
    credentials: list[dict[str, Any]] | None,
    attachment: dict[str, Any] | None,
    build: bool,
    target: dict[str, Any] | None,
) -> str:
    """Heym's order: base prompt and clarify protocol, available workflows, (user rules),
    attachment routing, credentials (ask-and-create mode only), build mode."""
    parts = [BASE_PROMPT, CLARIFY_PROTOCOL, workflows_section(workflows)]
    if attachment:
        parts.append(attachment_section(attachment))
    if credentials is not None:
        parts.append(credentials_section(credentials))
    if build:
        parts.append(build_mode_section(target))
    return "\n\n".join(parts)


BUILDER_INSTRUCTIONS = """Write the workflow as one fenced ```json block. Use an English name \
and description. Use textInput nodes for values a caller provides at run time. Do not guess \
URLs or ids: add discovery steps instead."""


def builder_system_prompt(
    *,
    workflows: list[dict[str, Any]],
    current: dict[str, Any] | None,
    credentials: list[dict[str, Any]],
) -> str:
    """The AI-Builder's prompt (`create_workflow`/`edit_workflow`): the DSL reference, the
    workflows an execute node may call, the goal and current workflow, the credentials."""
    parts = [
        dsl_reference(),
        workflows_section(workflows),
        credentials_section(credentials, ask=False),
    ]
    if current is not None:
        parts.append(
            "## Current Workflow Goal\n"
            f"{current.get('name', '')}: {current.get('description', '')}\n\n"
            "## Current Workflow Context (keep ids, credentialId, model and skills)\n```json\n"
            + json.dumps({"nodes": current.get("nodes"), "edges": current.get("edges")})[:60_000]
            + "\n```"
        )
    return "\n\n".join(parts)
