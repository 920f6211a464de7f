"""Workflow configuration in Postgres: the store moved to `libs/workflow/store.py` (the agent
runtime's assistant uses it too); this name stays for the gateway's modules."""

from libs.workflow.store import (
    WorkflowRow,
    delete_workflow,
    get_workflow,
    insert_workflow,
    list_versions,
    list_workflows,
    parse_id,
    update_workflow,
    workflow_cache,
)

__all__ = [
    "WorkflowRow",
    "delete_workflow",
    "get_workflow",
    "insert_workflow",
    "list_versions",
    "list_workflows",
    "parse_id",
    "update_workflow",
    "workflow_cache",
]
