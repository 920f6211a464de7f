"""`task chaos`: the long chaos run (1,000 mixed runs under kills); prints the seed and figures."""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys

from tests.chaos.run import chaos


def main() -> int:
    parser = argparse.ArgumentParser(prog="task chaos")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--seed", type=int, default=random.randrange(1, 2**31))
    parser.add_argument("--cluster", type=int, default=3, help="nats-servers (0: one, no cluster)")
    parser.add_argument("--concurrency", type=int, default=40)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    report = asyncio.run(
        chaos(
            runs=args.runs,
            kills=args.kills,
            seed=args.seed,
            cluster=args.cluster,
            concurrency=args.concurrency,
            deadline_s=3600,
            every_s=(3.0, 12.0),
        )
    )
    print(f"chaos seed {args.seed}: {'PASSED' if report.ok else 'FAILED'}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
