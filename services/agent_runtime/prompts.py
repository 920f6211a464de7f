"""Prompt assembly for agent and llm nodes, in Heym's order (§4.2): skills, system
instruction, JSON-schema hint; the user message from `userMessage` or the inputs' text."""

from __future__ import annotations

import json
from typing import Any

from libs.expressions import ExpressionError, render_template
from services.agent_runtime.call import AgentCall
from services.agent_runtime.tools.review import GUIDANCE as REVIEW_GUIDANCE


class PromptError(ValueError):
    """A template in the node's configuration cannot be rendered; names the field."""


def _render(call: AgentCall, field: str, default: str = "") -> str:
    raw = call.data.get(field)
    text = raw if isinstance(raw, str) and raw.strip() else default
    if not text:
        return ""
    try:
        return render_template(text, call.ctx, null_as_empty_single_token=True)
    except ExpressionError as exc:
        raise PromptError(
            f"node {call.node_label!r} field {field} ({text!r}): {exc.message}"
        ) from None


def _inputs_text(call: AgentCall) -> str:
    texts = []
    for output in call.inputs.values():
        if isinstance(output, dict) and isinstance(output.get("text"), str):
            texts.append(output["text"])
    return "\n".join(texts)


def json_schema_hint(schema: Any) -> str:
    text = schema if isinstance(schema, str) else json.dumps(schema, indent=2)
    return f"Respond only with a JSON object that matches this JSON schema:\n{text}"


def response_format(data: dict[str, Any]) -> dict[str, Any] | None:
    """`json_schema` (strict, no extra properties anywhere) or `json_object` without a schema."""
    if not data.get("jsonOutputEnabled"):
        return None
    schema = data.get("jsonOutputSchema")
    if isinstance(schema, str) and schema.strip():
        try:
            schema = json.loads(schema)
        except ValueError:
            schema = None
    if not isinstance(schema, dict) or not schema:
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "strict": True, "schema": _strict(schema)},
    }


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if out.get("type") == "object":
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def build_messages(call: AgentCall, *, skills_text: str = "") -> list[dict[str, Any]]:
    data = call.data
    system_parts = []
    if skills_text:
        system_parts.append(skills_text)
    system = _render(call, "systemInstruction")
    if system:
        system_parts.append(system)
    if data.get("jsonOutputEnabled"):
        system_parts.append(json_schema_hint(data.get("jsonOutputSchema") or {"type": "object"}))
    if data.get("hitlEnabled") and call.node_type == "agent":
        system_parts.append(review_guidance(_render(call, "hitlSummary")))
    user = _render(call, "userMessage", "$input.text") or _inputs_text(call)
    messages: list[dict[str, Any]] = []
    if system_parts:
        messages.append({"role": "system", "content": "\n\n".join(system_parts)})
    messages.append({"role": "user", "content": user})
    return messages


def review_guidance(guidelines: str) -> str:
    """Heym §4.2 item 6.2: the node's HITL guidelines, then how to use the review tool."""
    parts = [f"Human review guidelines:\n{guidelines}"] if guidelines.strip() else []
    parts.append(REVIEW_GUIDANCE)
    return "\n\n".join(parts)


def skills_prefix(data: dict[str, Any]) -> str:
    skills = data.get("skills") or []
    contents = [
        str(s.get("content")).strip()
        for s in skills
        if isinstance(s, dict) and isinstance(s.get("content"), str) and s["content"].strip()
    ]
    return "\n\n---\n\n".join(contents)
