"""Workflow validation on save and on run: every problem named by node or edge, all at once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from contracts.workflows import NODE_TYPES
from libs.a2a.remote import agent_list_problems, config_problems
from libs.workflow.agent_fields import agent_field_issues
from libs.workflow.graph import Graph, GraphError

# Documented in docs/security.md. Far above real workflows (tens of nodes), low enough that
# every per-run cost that grows with the graph stays small.
MAX_NODES = 1_000
MAX_EDGES = 4_000


class ValidationIssue(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    code: str
    message: str
    node_id: str | None = None
    edge_id: str | None = None
    field: str | None = None


def _node_name(node: dict[str, Any]) -> str:
    data = node.get("data") if isinstance(node.get("data"), dict) else {}
    label = data.get("label") if isinstance(data, dict) else None
    return f"node {node.get('id')!r}" + (f" ({label!r})" if label else "")


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _a2a_issues(node: dict[str, Any]) -> list[ValidationIssue]:
    """An `a2a` node's remote agent settings, an agent's `a2aAgents`."""
    data: dict[str, Any] = node["data"]
    nid = str(node.get("id"))
    if node.get("type") == "a2a":
        return [
            ValidationIssue(
                code="a2a_config",
                message=f"{_node_name(node)}: {message}",
                node_id=nid,
                field=field,
            )
            for field, message in config_problems(data)
            if not (field == "agentUrl" and _blank(data.get("agentUrl")))  # missing_field says it
        ]
    if node.get("type") == "agent":
        return [
            ValidationIssue(
                code="a2a_config",
                message=f"{_node_name(node)}: {message}",
                node_id=nid,
                field="a2aAgents",
            )
            for message in agent_list_problems(data.get("a2aAgents"))
        ]
    return []


def validate_workflow(nodes: Any, edges: Any) -> list[ValidationIssue]:
    """All problems found; an empty list means the workflow can be saved and run."""
    issues: list[ValidationIssue] = []
    if not isinstance(nodes, list):
        return [ValidationIssue(code="nodes_not_a_list", message="'nodes' must be a list")]
    if not isinstance(edges, list):
        return [ValidationIssue(code="edges_not_a_list", message="'edges' must be a list")]
    if len(nodes) > MAX_NODES or len(edges) > MAX_EDGES:
        return [
            ValidationIssue(
                code="too_large",
                message=f"a workflow may have at most {MAX_NODES} nodes and {MAX_EDGES} edges "
                f"(this one has {len(nodes)} and {len(edges)})",
            )
        ]
    ids: list[str] = []
    labels: list[str] = []
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get("id"), str) or not node["id"]:
            issues.append(
                ValidationIssue(code="node_without_id", message=f"node #{i} has no string 'id'")
            )
            continue
        nid = node["id"]
        ids.append(nid)
        data = node.get("data")
        if not isinstance(data, dict):
            issues.append(
                ValidationIssue(
                    code="node_without_data",
                    message=f"{_node_name(node)} has no 'data' object",
                    node_id=nid,
                )
            )
            continue
        label = data.get("label")
        if not isinstance(label, str) or not label.strip():
            issues.append(
                ValidationIssue(
                    code="missing_label",
                    message=f"{_node_name(node)} needs a non-empty data.label",
                    node_id=nid,
                    field="label",
                )
            )
        else:
            labels.append(label)
        ntype = node.get("type")
        spec = NODE_TYPES.get(ntype) if isinstance(ntype, str) else None
        if spec is None:
            issues.append(
                ValidationIssue(
                    code="unknown_node_type",
                    message=f"{_node_name(node)} has unknown type {ntype!r}; "
                    f"supported: {', '.join(sorted(NODE_TYPES))}",
                    node_id=nid,
                    field="type",
                )
            )
            continue
        for field in spec.required:
            value = data.get(field)
            if value is None or (isinstance(value, str) and not value.strip()):
                issues.append(
                    ValidationIssue(
                        code="missing_field",
                        message=f"{_node_name(node)} of type {ntype!r} needs data.{field}",
                        node_id=nid,
                        field=field,
                    )
                )
    for nid, count in Counter(ids).items():
        if count > 1:
            issues.append(
                ValidationIssue(
                    code="duplicate_node_id",
                    message=f"node id {nid!r} is used {count} times",
                    node_id=nid,
                )
            )
    for label, count in Counter(labels).items():
        if count > 1:
            issues.append(
                ValidationIssue(
                    code="duplicate_label",
                    message=f"label {label!r} is used by {count} nodes; labels name nodes in "
                    "expressions and must be unique",
                    field="label",
                )
            )
    for node in nodes:
        if isinstance(node, dict) and isinstance(node.get("data"), dict):
            issues.extend(_a2a_issues(node))
    known = set(ids)
    agents = {n["id"] for n in nodes if isinstance(n, dict) and n.get("type") == "agent"}
    for node in nodes:
        if isinstance(node, dict):
            issues.extend(
                ValidationIssue(code=p.code, message=p.message, node_id=p.node_id, field=p.field)
                for p in agent_field_issues(node, agents)
            )
    for i, edge in enumerate(edges):
        if not isinstance(edge, dict):
            issues.append(
                ValidationIssue(code="edge_not_an_object", message=f"edge #{i} is not an object")
            )
            continue
        eid = str(edge.get("id") or f"#{i}")
        for end in ("source", "target"):
            ref = edge.get(end)
            if not isinstance(ref, str) or not ref:
                issues.append(
                    ValidationIssue(
                        code="edge_missing_end", message=f"edge {eid!r} has no {end}", edge_id=eid
                    )
                )
            elif ref not in known:
                issues.append(
                    ValidationIssue(
                        code="edge_to_missing_node",
                        message=f"edge {eid!r} {end} {ref!r} is not a node of this workflow",
                        edge_id=eid,
                    )
                )
    if issues:
        return issues
    try:
        graph = Graph(nodes, edges)
    except GraphError as exc:
        return [ValidationIssue(code="malformed", message=str(exc))]
    cycle = graph.find_cycle()
    if cycle:
        names = " -> ".join(graph.labels[n] for n in cycle)
        issues.append(
            ValidationIssue(
                code="cycle",
                message=f"cycle {names}: only a loop node's 'loop' input may close a cycle",
                node_id=cycle[0],
            )
        )
    return issues
