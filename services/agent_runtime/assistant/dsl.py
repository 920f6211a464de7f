"""Reading a workflow out of model output (Heym §12.4's tolerant extraction) and the
deterministic credential pass over the nodes before a save (§12.3). Pure functions."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

NO_WORKFLOW = "AI Builder did not return a valid workflow JSON object"
LLM_NODE_TYPES = ("llm", "agent")
LLM_CREDENTIAL_TYPES = ("openai", "custom", "google")
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_NAMED_CREDENTIAL = re.compile(r"\$credentials\.([A-Za-z_][A-Za-z0-9_]*)")


def extract_workflow(text: str, goal: str) -> dict[str, Any] | None:
    """The first candidate (every fenced json block, then the whole reply) that parses as a
    workflow: an object, or its `workflow` key, with a list `nodes`."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for raw in candidates:
        found = _parse(raw.strip())
        if found is not None:
            return normalise(found, goal)
    return None


def workflow_from_argument(value: Any, goal: str) -> dict[str, Any] | None:
    """`save_workflow`'s `workflow` argument: an object, or a JSON string of one."""
    if isinstance(value, str):
        found = _parse(value.strip())
        return normalise(found, goal) if found is not None else extract_workflow(value, goal)
    if isinstance(value, dict):
        found = _as_workflow(value)
        return normalise(found, goal) if found is not None else None
    return None


def _parse(raw: str) -> dict[str, Any] | None:
    for attempt in (raw, _TRAILING_COMMA.sub(r"\1", raw)):
        try:
            value = json.loads(attempt)
        except ValueError:
            continue
        found = _as_workflow(value)
        if found is not None:
            return found
    return None


def _as_workflow(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("nodes"), list):
        return value
    inner = value.get("workflow")
    if isinstance(inner, dict) and isinstance(inner.get("nodes"), list):
        return inner
    return None


def normalise(wf: dict[str, Any], goal: str) -> dict[str, Any]:
    name = " ".join(str(wf.get("name") or "").split())[:255] or _name_from_goal(goal)
    description = str(wf.get("description") or "")[:1000] or (
        f"Generated from chat request: {goal}"
    )
    edges = wf.get("edges")
    return {
        "name": name,
        "description": description,
        "nodes": wf["nodes"],
        "edges": edges if isinstance(edges, list) else [],
    }


def _name_from_goal(goal: str) -> str:
    flat = " ".join(goal.split())
    if not flat:
        return "Generated Workflow"
    if len(flat) <= 60:
        return flat
    cut = flat[:60]
    return cut[: cut.rfind(" ")] if " " in cut else cut


@dataclass
class CredentialPass:
    nodes: list[dict[str, Any]]
    needs: list[dict[str, Any]] = field(default_factory=list)
    to_assign: list[dict[str, Any]] = field(default_factory=list)


def apply_credentials(
    nodes: list[Any],
    *,
    owned: dict[str, dict[str, str]],
    chat_credential_id: str | None,
    chat_model: str,
    mode: str,
    existing: dict[str, dict[str, Any]],
) -> CredentialPass:
    """Make every llm/agent node's credential one the user owns (Heym §12.3).

    An unchanged value of a node that already existed is kept; an owned credential's exact
    name becomes its id; a foreign id or a placeholder is replaced by the chat's own model
    credential (and its model when the node has none), else cleared. A foreign fallback is
    cleared with its model. A node left without a credential is reported: to assign in the UI
    (mode `off`, MCP) or as a need the user must decide (the other modes)."""
    by_name = {v["name"]: k for k, v in owned.items()}
    out: list[dict[str, Any]] = []
    result = CredentialPass(nodes=out)
    for node in nodes:
        if not isinstance(node, dict):
            out.append(node)
            continue
        node = dict(node)
        data = dict(node.get("data") or {}) if isinstance(node.get("data"), dict) else {}
        if node.get("type") in LLM_NODE_TYPES:
            before = existing.get(str(node.get("id")), {}).get("data") or {}
            data = _llm_credentials(data, before, owned, by_name, chat_credential_id, chat_model)
            if not data.get("credentialId"):
                entry = {
                    "node": data.get("label") or node.get("id"),
                    "node_type": node.get("type"),
                    "credential_types": list(LLM_CREDENTIAL_TYPES),
                }
                if mode == "off":
                    result.to_assign.append(entry)
                elif str(node.get("id")) not in existing:
                    result.needs.append(
                        {
                            **entry,
                            "field": "credentialId",
                            "existing": [v["name"] for v in owned.values()],
                        }
                    )
            node["data"] = data
        out.append(node)
    return result


def missing_named_credentials(
    nodes: list[Any], owned: dict[str, dict[str, str]]
) -> list[dict[str, Any]]:
    """`$credentials.<name>` references to credentials the user does not have, one entry per
    name (credential mode `ask_via_link`: the user creates each through a link)."""
    names = {v["name"] for v in owned.values()}
    found: dict[str, dict[str, Any]] = {}
    for node in nodes:
        if not isinstance(node, dict):
            continue
        text = json.dumps(node.get("data") or {}, default=str)
        for name in _NAMED_CREDENTIAL.findall(text):
            if name not in names and name not in found:
                label = (node.get("data") or {}).get("label") or node.get("id")
                found[name] = {"name": name, "type": "custom", "node": label}
    return list(found.values())


def _llm_credentials(
    data: dict[str, Any],
    before: dict[str, Any],
    owned: dict[str, dict[str, str]],
    by_name: dict[str, str],
    chat_credential_id: str | None,
    chat_model: str,
) -> dict[str, Any]:
    cred = str(data.get("credentialId") or "")
    if cred and cred == before.get("credentialId"):
        pass  # an existing node keeps its unchanged value
    elif cred in by_name:
        data["credentialId"] = by_name[cred]
    elif cred not in owned:  # missing, a placeholder, or someone else's
        if chat_credential_id and chat_credential_id in owned:
            data["credentialId"] = chat_credential_id
            if not data.get("model"):
                data["model"] = chat_model
        else:
            data["credentialId"] = ""
    fallback = str(data.get("fallbackCredentialId") or "")
    if fallback and fallback not in owned:
        data.pop("fallbackCredentialId", None)
        data.pop("fallbackModel", None)
    return data
