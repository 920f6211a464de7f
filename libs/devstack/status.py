"""`heym up`'s view of its processes: per-replica health and the status table it prints."""

from __future__ import annotations

import asyncio
import contextlib

import msgspec
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.health import HealthReply


def child_name(service: str, replica: int) -> str:
    """`scheduler`, `scheduler#2`, ...: the name of a service's n-th replica (from 1)."""
    return service if replica == 1 else f"{service}#{replica}"


def service_of(name: str) -> str:
    return name.split("#", 1)[0]


async def health_replies(nc: NATS, service: str, wait_s: float = 0.3) -> dict[int, HealthReply]:
    """Every replica of `service` that answers its health subject within `wait_s`, by pid."""
    decode = msgspec.json.Decoder(HealthReply).decode
    inbox = nc.new_inbox()
    found: dict[int, HealthReply] = {}
    sub = await nc.subscribe(inbox)
    try:
        await nc.publish(subjects.health(service), b"", reply=inbox)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while (left := deadline - loop.time()) > 0:
            try:
                msg = await sub.next_msg(timeout=left)
            except Exception:
                break
            with contextlib.suppress(msgspec.DecodeError):
                reply = decode(msg.data)
                found[reply.pid] = reply
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return found


def table(rows: list[tuple[str, str, str, str]]) -> str:
    header = ("service", "pid", "address", "state")
    rows = [header, *rows]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
