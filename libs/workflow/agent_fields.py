"""Agent-node configuration for guardrails and persistent memory (Heym §4.1): the accepted
values, how a node's `data` is read, and the problems a save reports (pure; the gateway adds
the checks that need the database: credentials and the ownership of shared nodes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

GUARDRAIL_CATEGORIES: Final = (
    "violence",
    "hate_speech",
    "sexual_content",
    "nsfw",
    "self_harm",
    "harassment",
    "illegal_activity",
    "political_extremism",
    "spam_phishing",
    "personal_data",
    "prompt_injection",
)
GUARDRAIL_SEVERITIES: Final = ("low", "medium", "high")
SHARE_PERMISSIONS: Final = ("read", "write")
MAX_SHARES: Final = 50
GUARDED_NODE_TYPES: Final = ("agent", "llm")


def guardrails_enabled(data: dict[str, Any]) -> bool:
    return bool(data.get("guardrailsEnabled"))


def guardrail_categories(data: dict[str, Any]) -> list[str]:
    """The node's known categories, in Heym's order, without repeats."""
    raw = data.get("guardrailsCategories")
    chosen = {str(c) for c in raw} if isinstance(raw, list) else set()
    return [c for c in GUARDRAIL_CATEGORIES if c in chosen]


def guardrail_severity(data: dict[str, Any]) -> str:
    raw = data.get("guardrailsSeverity")
    return raw if raw in GUARDRAIL_SEVERITIES else "medium"


def memory_enabled(data: dict[str, Any]) -> bool:
    return bool(data.get("persistentMemoryEnabled"))


@dataclass(frozen=True)
class FieldProblem:
    """One problem with a node's agent fields (validation turns it into a `ValidationIssue`)."""

    code: str
    message: str
    node_id: str
    field: str


@dataclass(frozen=True)
class MemoryShare:
    """`memoryShares` entry of an owner agent node: it lets the peer node (in the owner's
    workflow when `peer_workflow_id` is empty) read, or also write, the owner's memory."""

    peer_workflow_id: str
    peer_node_id: str
    permission: str


def memory_shares(data: dict[str, Any]) -> list[MemoryShare]:
    """The well-formed shares of a node (malformed entries are reported on save, skipped here)."""
    raw = data.get("memoryShares")
    if not isinstance(raw, list):
        return []
    out = []
    for entry in raw[:MAX_SHARES]:
        if not isinstance(entry, dict):
            continue
        peer = entry.get("peerCanvasNodeId")
        wid = entry.get("peerWorkflowId")
        perm = str(entry.get("permission") or "read").strip().lower()
        if not isinstance(peer, str) or not peer.strip():
            continue
        if wid is not None and not isinstance(wid, str):
            continue
        out.append(
            MemoryShare(
                peer_workflow_id=(wid or "").strip(),
                peer_node_id=peer.strip(),
                permission="write" if perm == "write" else "read",
            )
        )
    return out


def agent_field_issues(node: dict[str, Any], agent_ids: set[str]) -> list[FieldProblem]:
    """Problems with a guarded node's guardrail fields and an agent's memory shares
    (`agent_ids`: the workflow's agent nodes, which a share without a workflow names)."""
    data = node.get("data")
    if not isinstance(data, dict) or node.get("type") not in GUARDED_NODE_TYPES:
        return []
    nid = str(node.get("id"))
    name = f"node {nid!r} ({data.get('label')!r})"
    issues = _guardrail_issues(data, nid, name)
    if node.get("type") == "agent":
        issues.extend(_share_issues(data, nid, name, agent_ids))
    return issues


def _guardrail_issues(data: dict[str, Any], nid: str, name: str) -> list[FieldProblem]:
    issues: list[FieldProblem] = []
    raw = data.get("guardrailsCategories")
    if raw is not None:
        if not isinstance(raw, list):
            issues.append(
                FieldProblem(
                    code="guardrail_categories",
                    message=f"{name}: guardrailsCategories must be a list",
                    node_id=nid,
                    field="guardrailsCategories",
                )
            )
        else:
            unknown = sorted({str(c) for c in raw} - set(GUARDRAIL_CATEGORIES))
            if unknown:
                issues.append(
                    FieldProblem(
                        code="guardrail_categories",
                        message=f"{name}: unknown guardrail categories {unknown}; known: "
                        f"{', '.join(GUARDRAIL_CATEGORIES)}",
                        node_id=nid,
                        field="guardrailsCategories",
                    )
                )
    severity = data.get("guardrailsSeverity")
    if severity is not None and severity not in GUARDRAIL_SEVERITIES:
        issues.append(
            FieldProblem(
                code="guardrail_severity",
                message=f"{name}: guardrailsSeverity must be low, medium or high",
                node_id=nid,
                field="guardrailsSeverity",
            )
        )
    if guardrails_enabled(data):
        for field in ("guardrailCredentialId", "guardrailModel"):
            value = data.get(field)
            if not isinstance(value, str) or not value.strip():
                issues.append(
                    FieldProblem(
                        code="guardrail_config",
                        message=f"{name} has guardrails on but no {field}: guardrails need "
                        "their own credential and model",
                        node_id=nid,
                        field=field,
                    )
                )
    return issues


def _share_issues(
    data: dict[str, Any], nid: str, name: str, agent_ids: set[str]
) -> list[FieldProblem]:
    raw = data.get("memoryShares")
    if raw is None:
        return []

    def issue(message: str) -> FieldProblem:
        return FieldProblem(
            code="memory_share", message=f"{name}: {message}", node_id=nid, field="memoryShares"
        )

    if not isinstance(raw, list):
        return [issue("memoryShares must be a list")]
    if len(raw) > MAX_SHARES:
        return [issue(f"at most {MAX_SHARES} memory shares")]
    issues = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            issues.append(issue(f"memory share #{i} is not an object"))
            continue
        peer = entry.get("peerCanvasNodeId")
        wid = entry.get("peerWorkflowId")
        perm = entry.get("permission", "read")
        if not isinstance(peer, str) or not peer.strip():
            issues.append(issue(f"memory share #{i} needs peerCanvasNodeId"))
        elif peer.strip() == nid and not wid:
            issues.append(issue(f"memory share #{i} names the node itself"))
        elif not wid and peer.strip() not in agent_ids:
            issues.append(
                issue(f"memory share #{i} names {peer!r}, not an agent node of this workflow")
            )
        if wid is not None and not isinstance(wid, str):
            issues.append(issue(f"memory share #{i}: peerWorkflowId must be a string"))
        if not isinstance(perm, str) or perm.strip().lower() not in SHARE_PERMISSIONS:
            issues.append(issue(f"memory share #{i}: permission must be read or write"))
    return issues
