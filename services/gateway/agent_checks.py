"""Save-time checks of agent nodes that need the database: a guardrail credential must be one
of the user's, a memory share may only name an agent node in one of the user's workflows, and
a remote A2A agent's credential (an `a2a` node's or an agent's `a2aAgents`) must be one of the
user's (the rest, such as a missing guardrail model, is `libs.workflow` validation)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from libs.workflow.agent_fields import guardrails_enabled, memory_shares


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


def _agents(nodes: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for node in nodes:
        data = node.get("data") if isinstance(node, dict) else None
        if isinstance(data, dict) and node.get("type") in ("agent", "llm"):
            out.append((str(node.get("id")), str(node.get("type")), data))
    return out


async def agent_problems(
    pool: asyncpg.Pool[Any], owner_id: str, workflow_id: str | None, nodes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    problems: list[dict[str, Any]] = []
    owner = uuid.UUID(owner_id)
    for nid, field, named in _a2a_credentials(nodes):
        if not await _owns_credential(pool, owner, named):
            problems.append(
                {
                    "field": field,
                    "node_id": nid,
                    "code": "a2a_config",
                    "message": f"node {nid!r}: credential {named!r} of a remote A2A agent is "
                    "not one of your credentials",
                }
            )
    for nid, ntype, data in _agents(nodes):
        label = data.get("label")
        cred = data.get("guardrailCredentialId")
        if guardrails_enabled(data) and isinstance(cred, str) and cred.strip():
            cid = _uuid(cred.strip())
            found = cid is not None and await pool.fetchval(
                "SELECT 1 FROM credentials WHERE id = $1 AND owner_id = $2", cid, owner
            )
            if not found:
                problems.append(
                    {
                        "field": "guardrailCredentialId",
                        "node_id": nid,
                        "code": "guardrail_config",
                        "message": f"node {nid!r} ({label!r}): guardrail credential {cred!r} "
                        "is not one of your credentials",
                    }
                )
        if ntype != "agent":
            continue
        for share in memory_shares(data):
            peer_wid = share.peer_workflow_id
            if not peer_wid or peer_wid == workflow_id:
                continue  # same workflow: checked by validation against its nodes
            if not await _owns_agent(pool, owner, peer_wid, share.peer_node_id):
                problems.append(
                    {
                        "field": "memoryShares",
                        "node_id": nid,
                        "code": "memory_share",
                        "message": f"node {nid!r} ({label!r}): a memory share names node "
                        f"{share.peer_node_id!r} of workflow {peer_wid!r}, which is not an "
                        "agent node of one of your workflows",
                    }
                )
    return problems


def _a2a_credentials(nodes: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(node id, field, credential id) for each credential a remote A2A agent names."""
    out = []
    for node in nodes:
        data = node.get("data") if isinstance(node, dict) else None
        if not isinstance(data, dict):
            continue
        nid = str(node.get("id"))
        if node.get("type") == "a2a" and isinstance(data.get("credentialId"), str):
            out.append((nid, "credentialId", data["credentialId"]))
        elif node.get("type") == "agent" and isinstance(data.get("a2aAgents"), list):
            for entry in data["a2aAgents"]:
                if isinstance(entry, dict) and isinstance(entry.get("credentialId"), str):
                    out.append((nid, "a2aAgents", entry["credentialId"]))
    return [(nid, field, cred.strip()) for nid, field, cred in out if cred.strip()]


async def _owns_credential(pool: asyncpg.Pool[Any], owner: uuid.UUID, credential: str) -> bool:
    cid = _uuid(credential)
    return cid is not None and bool(
        await pool.fetchval("SELECT 1 FROM credentials WHERE id = $1 AND owner_id = $2", cid, owner)
    )


async def _owns_agent(
    pool: asyncpg.Pool[Any], owner: uuid.UUID, workflow_id: str, node: str
) -> bool:
    wid = _uuid(workflow_id)
    if wid is None:
        return False
    nodes = await pool.fetchval(
        "SELECT nodes FROM workflows WHERE id = $1 AND owner_id = $2", wid, owner
    )
    if not isinstance(nodes, list):
        return False
    return any(
        isinstance(n, dict) and n.get("id") == node and n.get("type") == "agent" for n in nodes
    )
