"""The Debug panel's stream: a running run's events, read from the log as Server-Sent Events
of HTML (the gateway reads run events for streams; the design's exception to read models).

Each event of the run (its own subjects, agent turns and work items: `heym.*.<run>.>`)
becomes the §2.13 frames of the execute stream (`libs.results.sse_frames`), and each frame an
entry of the panel (`entry`, appended). When node results have landed in the read model, the
timeline is sent again (`timeline`, at most once a second). At the run's end (or its pause
for a human review) the stream waits for the read model to hold the end, sends the last
timeline, the status and the review notice, then `done`, which closes the browser's
connection. Entries carry the stream position as their SSE id, so a browser that reconnects
(`Last-Event-ID`) goes on where it stopped instead of starting over.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import datetime
from html import escape
from typing import Any

from litestar.response.sse import ServerSentEventMessage

from contracts import subjects
from libs.results import sse_frames
from libs.service import ServiceContext
from services.gateway.inspector.fragments import badge, duration, mapping, number, when
from services.gateway.inspector.live_slots import LiveSlots
from services.gateway.inspector.run_html import notice, status_badge, timeline_fragment
from services.gateway.inspector.run_reads import nodes_reached, read_run, run_status

TICK_S = 0.25
REFRESH_S = 1.0
KEEPALIVE_S = 15.0
STREAM_LIMIT_S = 3600.0
SETTLE_S = 10.0
MAX_ENTRIES = 2000
_TOO_MANY = (
    "<li data-kind=refused>You follow too many runs live at once; close another tab's "
    "Debug panel and reload this page.</li>"
)


def _tool_line(node: str, entry: dict[str, Any]) -> tuple[str, str] | None:
    phase = entry.get("phase")
    name = escape(str(entry.get("name") or ""))
    if phase == "start":
        args = mapping(entry.get("arguments"))
        keys = ", ".join(escape(str(k)) for k in args.get("keys") or [])
        target = args.get("sub_agent_label") or args.get("workflow_id")
        extra = f" → {escape(str(target))}" if target else ""
        return "tool-start", f"{node}: tool <b>{name}</b> started ({keys}){extra}"
    if phase == "result":
        result = mapping(entry.get("result"))
        status = str(result.get("status") or ("error" if result.get("has_error") else "success"))
        took = duration(result.get("execution_time_ms"))
        return "tool-result", f"{node}: tool <b>{name}</b> {badge(status)} {took}"
    if phase == "compression":
        return "compression", (
            f"{node}: Context compressed ({number(entry.get('messages_compressed'))} messages"
            f" → summary), about {number(entry.get('tokens_before'))} → "
            f"{number(entry.get('tokens_after'))} tokens"
        )
    return None


def entry_html(frame: dict[str, Any], recorded_at: datetime) -> str | None:
    """One Debug panel line for one §2.13 frame (None for frames it does not show)."""
    kind = str(frame.get("type"))
    label = escape(str(frame.get("node_label") or frame.get("node_id") or ""))
    line: tuple[str, str] | None = None
    if kind == "execution_started":
        line = kind, "Run started"
    elif kind == "node_start":
        message = frame.get("message")
        default = f"[START] {frame.get('node_label')}"
        more = f" · {escape(str(message))}" if message and message != default else ""
        line = kind, f"<b>{label}</b> started{more}"
    elif kind == "node_retry":
        line = (
            kind,
            (
                f"<b>{label}</b>: attempt {number((frame.get('attempt') or 1) - 1)} of "
                f"{number(frame.get('max_attempts'))} failed, retrying"
            ),
        )
    elif kind == "node_complete":
        error = frame.get("error")
        tail = f": {escape(str(error)[:300])}" if error else ""
        line = (
            kind,
            (
                f"<b>{label}</b> {badge(frame.get('status'))} "
                f"{duration(frame.get('execution_time_ms'))}{tail}"
            ),
        )
    elif kind == "agent_progress" and isinstance(frame.get("entry"), dict):
        line = _tool_line(f"<b>{label}</b>", frame["entry"])
    elif kind == "execution_complete":
        line = kind, f"Run ended {badge(frame.get('status'))}"
    if line is None:
        return None
    css, text = line
    return f'<li class="{css}" data-kind="{css}">{when(recorded_at, clock=True)} {text}</li>'


async def _settled(ctx: ServiceContext, owner_id: str, run_id: str) -> None:
    """Wait (bounded) until the read model no longer says `running`."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        if await run_status(ctx.pool, owner_id, run_id) != "running":
            return
        await asyncio.sleep(0.1)


async def follow(
    ctx: ServiceContext,
    slots: LiveSlots,
    owner_id: str,
    run_id: str,
    workflow_id: str,
    after: int,
) -> AsyncIterator[ServerSentEventMessage]:
    """The stream, holding one of the viewer's live slots while it runs (taken when it
    starts, so a stream that never starts holds none)."""
    if not slots.take(owner_id):
        yield ServerSentEventMessage(data=_TOO_MANY, event="entry")
        yield ServerSentEventMessage(data="too many live views open", event="live")
        yield ServerSentEventMessage(data="end", event="done")
        return
    try:
        async for message in _follow(ctx, owner_id, run_id, workflow_id, after):
            yield message
    finally:
        slots.give_back(owner_id)


async def _follow(
    ctx: ServiceContext, owner_id: str, run_id: str, workflow_id: str, after: int
) -> AsyncIterator[ServerSentEventMessage]:
    sent = 0
    shown_up_to = 0  # newest node result's log position not yet in the sent timeline
    last_refresh = time.monotonic()
    last_write = time.monotonic()
    deadline = time.monotonic() + STREAM_LIMIT_S
    ended: str | None = None
    async with ctx.event_log.tail(subjects.run_everything(run_id), after=after) as queue:
        while ended is None and time.monotonic() < deadline:
            try:
                env = await asyncio.wait_for(queue.get(), TICK_S)
            except TimeoutError:
                env = None
            if env is not None:
                lines: list[str] = []
                for frame in sse_frames(env, workflow_id=workflow_id):
                    if frame["type"] in ("node_complete", "node_retry"):
                        shown_up_to = max(shown_up_to, env.sequence * 1000 + env.index)
                    if frame["type"] == "execution_complete":
                        # A pause ends the stream only if nothing came after it (a resumed
                        # run's earlier pause is read again when following from the start).
                        paused = frame["status"] == "pending"
                        last = await ctx.event_log.last_sequence(subjects.run_all(run_id))
                        if paused and last > env.sequence:
                            continue
                        ended = str(frame["status"])
                    html = entry_html(frame, env.recorded_at)
                    if html is not None and sent < MAX_ENTRIES:
                        lines.append(html)
                        sent += 1
                    elif html is not None and sent == MAX_ENTRIES:
                        lines.append("<li>More events are not shown here; see the timeline.</li>")
                        sent += 1
                for i, html in enumerate(lines):
                    last_one = i == len(lines) - 1
                    yield ServerSentEventMessage(
                        data=html, event="entry", id=env.sequence if last_one else None
                    )
                    last_write = time.monotonic()
            now = time.monotonic()
            if (
                ended is None
                and shown_up_to
                and now - last_refresh >= REFRESH_S
                and await nodes_reached(ctx.pool, run_id) >= shown_up_to
            ):
                data = await read_run(ctx.pool, owner_id, run_id)
                if data is not None:
                    yield ServerSentEventMessage(data=timeline_fragment(data), event="timeline")
                shown_up_to, last_refresh, last_write = 0, now, now
            if now - last_write >= KEEPALIVE_S:
                yield ServerSentEventMessage(comment="keepalive")
                last_write = now
    if ended is None:
        return  # the time limit: the browser reconnects and goes on after its last entry
    await _settled(ctx, owner_id, run_id)
    data = await read_run(ctx.pool, owner_id, run_id)
    if data is not None:
        yield ServerSentEventMessage(data=timeline_fragment(data), event="timeline")
        yield ServerSentEventMessage(data=notice(data), event="notice")
        status = str(data.run["status"])
        yield ServerSentEventMessage(data=status_badge(status), event="status")
    yield ServerSentEventMessage(data="the run ended: no longer following", event="live")
    yield ServerSentEventMessage(data="end", event="done")
