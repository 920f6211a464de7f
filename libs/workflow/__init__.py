"""Pure workflow-graph analysis shared by validation (gateway) and scheduling (scheduler)."""

from libs.workflow.graph import Edge, Graph, GraphError
from libs.workflow.validation import ValidationIssue, validate_workflow

__all__ = ["Edge", "Graph", "GraphError", "ValidationIssue", "validate_workflow"]
