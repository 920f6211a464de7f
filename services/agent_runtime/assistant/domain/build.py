"""Build mode (Heym §12.5) as a fold of the turn's tool results: revision, test budget, gate.

A save raises `revision` (and so un-passes it); a successful test run passes the revision it
tested (tools run one after another, so that is the revision current at the time); `finish`
is accepted only when the latest save has passed. Five test runs per turn; once spent, the
save and test tools are withdrawn and `finish` stays only if it would be accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.chat import MAX_BUILD_TEST_RUNS
from libs.chat import Turn
from services.agent_runtime.assistant.domain.catalog import (
    BUILD_TOOLS,
    BUILDER_TOOLS,
    FINISH,
    READ_TOOLS,
    ToolDef,
)

SAVED = ("created", "saved")


@dataclass
class BuildProgress:
    revision: int = 0
    passed_revision: int = 0
    runs_used: int = 0
    workflow_id: str | None = None
    workflow_name: str = ""
    test_runs: int = 0

    @property
    def passed(self) -> bool:
        return self.revision > 0 and self.passed_revision == self.revision

    @property
    def runs_left(self) -> int:
        return max(0, MAX_BUILD_TEST_RUNS - self.runs_used)


def progress(turn: Turn) -> BuildProgress:
    p = BuildProgress()
    if turn.message.build is not None and turn.message.build.target_workflow_id:
        p.workflow_id = turn.message.build.target_workflow_id
    for call in turn.calls():
        done = call.finished
        if done is None:
            if call.name == "run_workflow_test" and call.started is not None:
                p.runs_used += 1  # a run in flight counts against the budget
            continue
        result: dict[str, Any] = done.result if isinstance(done.result, dict) else {}
        if call.name == "save_workflow" and result.get("status") in SAVED:
            p.revision += 1
            p.workflow_id = str(result.get("workflow_id") or p.workflow_id or "")
            p.workflow_name = str(result.get("workflow_name") or "")
        elif call.name == "run_workflow_test" and result.get("status") != "refused":
            p.runs_used += 1
            p.test_runs += 1
            if result.get("status") == "success" and result.get("revision") == p.revision:
                p.passed_revision = p.revision
    return p


def offered(turn: Turn) -> list[ToolDef]:
    """The tools the model may call in the next round of `turn`."""
    if turn.message.build is None:
        return [*READ_TOOLS, *BUILDER_TOOLS]
    p = progress(turn)
    if p.runs_left > 0:
        return [*READ_TOOLS, *BUILD_TOOLS]
    return [*READ_TOOLS, FINISH] if p.passed else list(READ_TOOLS)


def finish_refusal(p: BuildProgress) -> str | None:
    """Why `finish` is refused now, or None when it is accepted."""
    if p.revision == 0:
        return "Nothing has been saved yet: save the workflow and test it before finishing."
    if not p.passed:
        return (
            "The latest save has no passing test run: run run_workflow_test on it and check "
            "the report against the request before finishing."
        )
    return None
