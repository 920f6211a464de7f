"""The assistant's tools as the model sees them (Heym §12.2, §12.5): schemas, step labels, kinds.

Pure data. A tool's *kind* says how a call completes: `sync` tools answer at once; `run`
tools start a workflow run and finish when the run's end is reported; `wait` tools check a
run on durable timers. Labels are the exact words the user sees for each step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from contracts.chat import MAX_BUILD_TEST_RUNS

Kind = Literal["sync", "run", "wait"]


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    parameters: dict[str, Any]
    kind: Kind = "sync"
    required: tuple[str, ...] = field(default=())

    def schema(self) -> dict[str, Any]:
        """The function schema the model gets (built once per tool: every round sends it)."""
        cached = _SCHEMAS.get(id(self))
        if cached is not None and cached[0] is self:
            return cached[1]
        built = self._schema()
        _SCHEMAS[id(self)] = (self, built)
        return built

    def _schema(self) -> dict[str, Any]:
        params = dict(self.parameters)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": params,
                    "required": list(self.required),
                },
            },
        }


# id -> (the tool, its schema); the tools are module constants, so this stays small.
_SCHEMAS: dict[int, tuple[ToolDef, dict[str, Any]]] = {}

_TIME_RANGE = {"type": "string", "enum": ["24h", "7d", "30d", "all"]}

READ_TOOLS: Final = (
    ToolDef(
        "list_workflows",
        "List the user's workflows (newest first) with their input fields and output node. "
        "Call it before saying a workflow does not exist.",
        {},
    ),
    ToolDef(
        "get_workflow_definition",
        "Read one workflow: a summary of its nodes and edges, or everything with "
        "full_details=true.",
        {
            "workflow_id": {"type": "string"},
            "full_details": {"type": "boolean", "default": False},
        },
        required=("workflow_id",),
    ),
    ToolDef(
        "execute_workflow",
        "Run one of the user's workflows with inputs keyed by its input fields and return its "
        "outputs and node results. A workflow that looks able to answer the request should be "
        "run before saying you cannot help.",
        {
            "workflow_id": {"type": "string"},
            "inputs": {"type": "object", "description": "keyed by the workflow's input fields"},
        },
        kind="run",
        required=("workflow_id",),
    ),
    ToolDef(
        "wait_for_execution_update",
        "Check a running execution again every interval_seconds (1-30, default 5), at most "
        "max_checks times (1-10, default 5); stops as soon as it is neither pending nor running.",
        {
            "execution_history_id": {"type": "string"},
            "interval_seconds": {"type": "integer", "default": 5},
            "max_checks": {"type": "integer", "default": 5},
        },
        kind="wait",
        required=("execution_history_id",),
    ),
    ToolDef(
        "resolve_hitl_review",
        "Decide a pending human review of one of the user's runs (an execute_workflow or "
        "wait_for_execution_update result with pending_review), only when the user asks you "
        "to: accept the draft, edit it (edited_text) or refuse it (refusal_reason). The run "
        "then goes on; follow it with wait_for_execution_update.",
        {
            "action": {"type": "string", "enum": ["accept", "edit", "refuse"]},
            "request_id": {"type": "string"},
            "review_url": {"type": "string"},
            "edited_text": {"type": "string"},
            "refusal_reason": {"type": "string"},
        },
        required=("action",),
    ),
    ToolDef(
        "get_recent_executions",
        "Recent executions (workflow runs and chat turns), newest first.",
        {
            "time_range": {**_TIME_RANGE, "default": "24h"},
            "limit": {"type": "integer", "default": 30},
        },
    ),
    ToolDef("get_active_executions", "Workflows that are running or waiting right now.", {}),
    ToolDef(
        "get_workflow_run_history",
        "One workflow's runs: counts, timings and a page of runs; with execution_id, one run's "
        "inputs, outputs and node results.",
        {
            "workflow_id": {"type": "string"},
            "execution_id": {"type": "string"},
            "time_range": {**_TIME_RANGE, "default": "all"},
            "status": {"type": "string"},
            "limit": {"type": "integer", "default": 20},
            "offset": {"type": "integer", "default": 0},
        },
        required=("workflow_id",),
    ),
    ToolDef(
        "get_analytics_stats",
        "Execution counts, success and error rates and latency percentiles.",
        {"workflow_id": {"type": "string"}, "time_range": {**_TIME_RANGE, "default": "24h"}},
    ),
    ToolDef(
        "get_schedule_events",
        "Upcoming runs of the user's scheduled (cron) workflows in a day, week or month around "
        "reference_date, or between start_iso and end_iso (at most 62 days).",
        {
            "view_window": {"type": "string", "enum": ["day", "week", "month"]},
            "reference_date": {"type": "string", "description": "YYYY-MM-DD"},
            "start_iso": {"type": "string"},
            "end_iso": {"type": "string"},
            "include_shared": {"type": "boolean", "default": True},
        },
    ),
    ToolDef(
        "get_global_variables",
        "The user's global variables ($global): names and types; pass name to read one value.",
        {"name": {"type": "string"}},
    ),
    ToolDef(
        "search_documentation",
        "Search Heym's documentation (at most 2 searches per message).",
        {"query": {"type": "string"}},
        required=("query",),
    ),
)

BUILDER_TOOLS: Final = (
    ToolDef(
        "create_workflow",
        "Build and save a new workflow from a goal. Do not call it while the request is "
        "still ambiguous: ask with a heym-clarify block first. Nothing is run.",
        {
            "goal": {"type": "string"},
            "inputs": {"type": "object"},
            "credential_choices": {"type": "array", "items": {"type": "object"}},
        },
        required=("goal",),
    ),
    ToolDef(
        "edit_workflow",
        "Change an existing workflow following instructions (a new version is kept).",
        {
            "workflow_id": {"type": "string"},
            "instructions": {"type": "string"},
            "inputs": {"type": "object"},
            "credential_choices": {"type": "array", "items": {"type": "object"}},
        },
        required=("workflow_id", "instructions"),
    ),
)

SAVE_WORKFLOW = ToolDef(
    "save_workflow",
    "Save the complete workflow you wrote (DSL: name, description, nodes, edges). Creates it, "
    "or updates the target (or workflow_id) when there is one. Validation errors come back.",
    {
        "workflow": {"type": "object"},
        "workflow_id": {"type": "string"},
        "credential_choices": {"type": "array", "items": {"type": "object"}},
    },
    required=("workflow",),
)
RUN_WORKFLOW_TEST = ToolDef(
    "run_workflow_test",
    f"Run the latest saved workflow for real (side effects happen) with inputs, saying what "
    f"you expect; returns a bounded report. At most {MAX_BUILD_TEST_RUNS} runs per turn.",
    {"inputs": {"type": "object"}, "expect": {"type": "string"}},
    kind="run",
    required=("inputs", "expect"),
)
FINISH = ToolDef(
    "finish",
    "End the build with a summary for the user. Accepted only after a passing test run of "
    "the latest save.",
    {"summary": {"type": "string"}},
    required=("summary",),
)
BUILD_TOOLS: Final = (SAVE_WORKFLOW, RUN_WORKFLOW_TEST, FINISH)

ALL_TOOLS: Final[dict[str, ToolDef]] = {
    t.name: t for t in (*READ_TOOLS, *BUILDER_TOOLS, *BUILD_TOOLS)
}


def kind_of(name: str) -> Kind:
    tool = ALL_TOOLS.get(name)
    return tool.kind if tool is not None else "sync"


def label(name: str, args: dict[str, Any], *, workflow_name: str = "", attempt: int = 0) -> str:
    """The step label the user sees while the tool runs (Heym's exact words)."""
    if name == "list_workflows":
        return "Listing workflows..."
    if name == "get_workflow_definition":
        return f'Reading "{workflow_name or args.get("workflow_id", "")}" content...'
    if name == "execute_workflow":
        return f'Running workflow "{workflow_name or args.get("workflow_id", "")}"...'
    if name == "wait_for_execution_update":
        return "Waiting for workflow update..."
    if name == "resolve_hitl_review":
        return "Resolving human review..."
    if name == "get_recent_executions":
        return "Listing recent executions..."
    if name == "get_active_executions":
        return "Checking running workflows..."
    if name == "get_workflow_run_history":
        return "Reading run history..."
    if name == "get_analytics_stats":
        return "Fetching analytics..."
    if name == "get_schedule_events":
        return "Loading scheduled runs..."
    if name == "get_global_variables":
        wanted = args.get("name")
        return f'Getting variable "{wanted}"...' if wanted else "Querying global variables..."
    if name == "search_documentation":
        return f'Searching docs for "{args.get("query", "")}"...'
    if name == "create_workflow":
        return "Building a new workflow..."
    if name == "edit_workflow":
        return f'Editing workflow "{workflow_name or args.get("workflow_id", "")}"...'
    if name == "save_workflow":
        return "Saving the workflow..."
    if name == "run_workflow_test":
        return f"Testing the workflow · attempt {attempt}/{MAX_BUILD_TEST_RUNS}..."
    if name == "finish":
        return "Finishing..."
    return f"Running {name}..."
