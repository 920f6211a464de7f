"""Pure workflow-graph analysis shared by validation (gateway) and scheduling (scheduler)."""

from libs.workflow.graph import Edge, Graph, GraphError
from libs.workflow.validation import MAX_EDGES, MAX_NODES, ValidationIssue, validate_workflow

__all__ = [
    "MAX_EDGES",
    "MAX_NODES",
    "Edge",
    "Graph",
    "GraphError",
    "ValidationIssue",
    "validate_workflow",
]
