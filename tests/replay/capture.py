"""Capture a finished run from a running system as a replay recording.

    python -m tests.replay.capture NATS_URL RUN_ID NAME [--dir tests/replay/recorded]

Reads everything recorded for the run (`heym.*.<run>.>`: the scheduler's view and every agent
invocation's own events, in stream order) and writes `NAME.json`: the workflow name, the
run's end (status, outputs) and each event with its subject (the run id replaced by `RUN`)
and stream sequence. `tests/replay/test_recorded_runs.py` replays every file there against
the current code, so a change that would make an old run replay differently fails.

To record a new case: start the system (`heym up`, or the e2e `System`), run the workflow,
then run this with the run id (the execute answer's `execution_history_id`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import nats

from contracts import subjects
from contracts.runs import RunCompleted, RunRequested
from libs.eventlog import EventLog

RECORDED = Path(__file__).parent / "recorded"


async def capture(nats_url: str, run_id: str) -> dict[str, Any]:
    nc = await nats.connect(nats_url)
    try:
        envelopes = await EventLog(nc).read(subjects.run_everything(run_id))
    finally:
        await nc.close()
    request = next(e.event for e in envelopes if isinstance(e.event, RunRequested))
    done = next(e.event for e in envelopes if isinstance(e.event, RunCompleted))
    assert isinstance(request, RunRequested)
    assert isinstance(done, RunCompleted)
    events = []
    for env in envelopes:
        if env.subject.startswith("heym.timers."):
            continue  # a pending timer's schedule, not an event of the run
        events.append(
            {
                "subject": env.subject.replace(f".{run_id}.", ".RUN."),
                "sequence": env.sequence,
                "recorded_at_ms": int(env.recorded_at.timestamp() * 1000),
                "event": msgspec.to_builtins(env.event),
            }
        )
    return {
        "run_id": run_id,
        "workflow": request.workflow_name,
        "status": done.status,
        "outputs": done.outputs,
        "events": events,
    }


def write(recording: dict[str, Any], name: str, directory: Path = RECORDED) -> Path:
    path = directory / f"{name}.json"
    path.write_text(json.dumps(recording, indent=1, sort_keys=False) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("nats_url")
    parser.add_argument("run_id")
    parser.add_argument("name")
    parser.add_argument("--dir", type=Path, default=RECORDED)
    args = parser.parse_args()
    recording = asyncio.run(capture(args.nats_url, args.run_id))
    print(write(recording, args.name, args.dir))


if __name__ == "__main__":
    main()
