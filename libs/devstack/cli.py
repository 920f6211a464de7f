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
    up = sub.add_parser(
        "up",
        help="start embedded NATS and Postgres and the five services; Ctrl-C stops everything",
    )
    up.add_argument(
        "--nats-cluster",
        type=int,
        default=1,
        metavar="N",
        help="start N embedded nats-servers as one JetStream cluster (run stream replicated "
        "min(N, 3) times); default 1",
    )
    up.add_argument(
        "--replicas",
        default="",
        metavar="SPEC",
        help="replicas per service, e.g. scheduler=3,agent_runtime=2 (the gateway has one: "
        "it owns the HTTP port)",
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
        from libs.devstack.stack import StackError, parse_replicas, run_stack

        try:
            replicas = parse_replicas(args.replicas)
            if not 1 <= args.nats_cluster <= 7:
                raise StackError("--nats-cluster takes 1 to 7 nodes")
        except StackError as exc:
            print(f"heym: {exc}", file=sys.stderr)
            return 2
        return asyncio.run(run_stack(settings, nats_cluster=args.nats_cluster, replicas=replicas))
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
