"""`task bench`: run every benchmark, print one table, the targets met or not, and a comparison
with the previous run; optionally write JSON (HEYM_BENCH_OUT)."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys

from tests.bench import (
    a2a_bench,
    agent_bench,
    assistant_bench,
    eventlog_bench,
    expressions_bench,
    inspector_bench,
    memory_bench,
    review_bench,
    sandbox_bench,
    scaleout_bench,
    tracing_bench,
    workflow_bench,
)
from tests.bench.harness import Figure, report, write_json
from tests.bench.targets import comparison_report, load_previous, targets_report

SUITES = {
    "eventlog": eventlog_bench.run,
    "workflow": workflow_bench.run,
    "agent": agent_bench.run,
    "sandbox": sandbox_bench.run,
    "assistant": assistant_bench.run,
    "expressions": expressions_bench.run,
    "review": review_bench.run,
    "a2a": a2a_bench.run,
    "memory": memory_bench.run,
    "scaleout": scaleout_bench.run,
    "tracing": tracing_bench.run,
    "inspector": inspector_bench.run,
}
# `task bench:peers` only: the peers are an optional extra.
OPTIONAL = {"peers": "tests.bench.peers_bench"}


async def main(selected: list[str]) -> None:
    # The previous run's figures (the file HEYM_BENCH_OUT names, before it is overwritten),
    # or an explicit HEYM_BENCH_PREVIOUS.
    previous = load_previous(
        os.environ.get("HEYM_BENCH_PREVIOUS") or os.environ.get("HEYM_BENCH_OUT")
    )
    figures: list[Figure] = []
    suites = dict(SUITES)
    for name in selected:
        if name in OPTIONAL:
            suites[name] = importlib.import_module(OPTIONAL[name]).run
    for name, suite in suites.items():
        if selected and name not in selected:
            continue
        print(f"running {name} benchmarks ...", file=sys.stderr, flush=True)
        figures.extend(await suite())
    print(report(figures))
    for section in (targets_report(figures), comparison_report(figures, previous)):
        if section:
            print("\n" + section)
    write_json(figures)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(sys.argv[1:]))
