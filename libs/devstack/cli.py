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
    admin = sub.add_parser("admin", help="administer a deployment (HEYM_DATABASE_URL)")
    admin_sub = admin.add_subparsers(dest="action", required=True)
    admin_sub.add_parser(
        "create",
        help="make sure the admin user exists and print a new API key for it (once)",
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
    if args.command == "admin" and args.action == "create":
        from libs.devstack.admin import create_admin

        try:
            email, key = asyncio.run(create_admin(settings))
        except SettingsError as exc:
            print(f"heym: {exc}", file=sys.stderr)
            return 2
        if key is None:
            print(f"admin {email}: HEYM_ADMIN_API_KEY is valid for it")
        else:
            print(f"admin {email}: API key (shown once, store it now):")
            print(key)
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
