"""The assistant's pure domain: the next step of a conversation, decided from its record."""

from services.agent_runtime.assistant.domain.decide import (
    AskModel,
    CheckRun,
    FinishRun,
    Idle,
    PrepareTurn,
    Record,
    RunTool,
    StartTool,
    Step,
    asks_clarification,
    decide,
    markers,
    run_timeout_timer_id,
    step_key,
    wait_timer_id,
)

__all__ = [
    "AskModel",
    "CheckRun",
    "FinishRun",
    "Idle",
    "PrepareTurn",
    "Record",
    "RunTool",
    "StartTool",
    "Step",
    "asks_clarification",
    "decide",
    "markers",
    "run_timeout_timer_id",
    "step_key",
    "wait_timer_id",
]
