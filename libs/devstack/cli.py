"""The `heym` command: `heym up` runs the whole system on this machine."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from libs.config import SettingsError, load_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="heym", description="Heym AI-workflow engine")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "up",
        help="start embedded NATS and Postgres and the five services; Ctrl-C stops everything",
    )
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"heym: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "up":
        from libs.devstack.stack import run_stack

        return asyncio.run(run_stack(settings))
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
