"""The tool sandbox's NATS edge.

- `heym.run.*.sched.tool_sandbox`: node invocations (`http` and `a2a` nodes;
  `NodeToolDispatched` from agents that still dispatch canvas node tools this way). Each
  result is appended to the invocation's subject with expected sequence 0: exactly one
  result per invocation.
- `heym.work.*.tool_sandbox.*` (consumer `tool_sandbox-tools`): agent tool calls
  (`work_items.py`).
- `heym.query.tool_sandbox.mcp_list_tools`: an agent's MCP tools at its start.
- `heym.svc.tool_sandbox.cancel`: cancellations broadcast between replicas.

Every piece of work goes through the fair schedulers (`fairness.py`): one user's slow calls
never hold more than their share of this replica's slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import msgspec
from nats.aio.msg import Msg

from contracts import subjects
from contracts.agents import NodeToolDispatched
from contracts.base import Envelope
from contracts.nodes import NodeDispatched
from contracts.tools import MCP_LIST_SUBJECT, TOOL_CANCEL_BROADCAST, McpListRequest
from libs.service import ServiceContext
from libs.service.failures import fail_dispatches
from libs.service.work import (
    WorkConsumer,
    give_up,
    kept_alive,
    redelivery_delay,
    through_outages,
)
from services.tool_sandbox.nodes import CredentialSource, NodeRunner, as_dispatch
from services.tool_sandbox.runtime import SandboxRuntime
from services.tool_sandbox.work_items import ToolCalls

log = logging.getLogger(__name__)

# A crashed worker's work is redelivered after ack_wait; waiting and running work is kept alive.
KEEPALIVE_S = 3.0
ACK_WAIT_S = 10.0
MAX_DELIVER = 5

_decode_list = msgspec.json.Decoder(McpListRequest).decode


def register(ctx: ServiceContext) -> None:
    runtime = SandboxRuntime(ctx.settings, lambda: ctx.nc)
    ctx.details["sandbox"] = runtime.containment.label
    ctx.on_close(runtime.close)
    nodes: NodeRunner | None = None
    calls: ToolCalls | None = None
    keepalives: set[asyncio.Task[None]] = set()

    def node_runner() -> NodeRunner:
        nonlocal nodes
        if nodes is None:
            nodes = NodeRunner(
                ctx.event_log,
                runtime.http,
                credentials=CredentialSource(ctx.nc),
                a2a=runtime.a2a,
                http_timeout_s=ctx.settings.http_timeout_s,
                http_max_response_bytes=ctx.settings.http_max_response_bytes,
            )
        return nodes

    def tool_calls() -> ToolCalls:
        nonlocal calls
        if calls is None:
            calls = ToolCalls(
                ctx.event_log,
                runtime.executor,
                io=runtime.io,
                processes=runtime.process_slots,
                max_deliver=MAX_DELIVER,
                backoff_s=ctx.settings.redelivery_backoff_s,
            )
        return calls

    async def on_nodes(envelopes: list[Envelope], msg: Msg) -> None:
        work = [
            (env, as_dispatch(env.event))
            for env in envelopes
            if (isinstance(env.event, NodeDispatched) and env.event.service == ctx.service)
            or isinstance(env.event, NodeToolDispatched)
        ]
        if not work:
            with contextlib.suppress(Exception):
                await msg.ack()
            return
        redelivered = msg.metadata.num_delivered > 1
        remaining = len(work)
        owner = work[0][1].owner_id or "anonymous"
        seq = msg.metadata.sequence.stream
        done = asyncio.Event()
        failures: list[str] = []

        async def keep() -> None:
            # alive while waiting for a slot too, so a busy replica's queue is not redelivered
            async with kept_alive(msg, KEEPALIVE_S):
                await done.wait()
            if not failures:
                with contextlib.suppress(Exception):
                    await msg.ack()
                return
            delivered = msg.metadata.num_delivered
            if delivered >= MAX_DELIVER:  # never leave the node waiting for ever
                envs = [env for env, _ in work]
                await give_up(
                    [msg],
                    lambda: fail_dispatches(ctx.event_log, envs, failures[0]),
                    "tool_sandbox-work",
                )
                return
            with contextlib.suppress(Exception):
                await msg.nak(delay=redelivery_delay(delivered, ctx.settings.redelivery_backoff_s))

        keeper = asyncio.create_task(keep())
        keepalives.add(keeper)
        keeper.add_done_callback(keepalives.discard)

        async def one(env: Envelope, ev: NodeDispatched) -> None:
            nonlocal remaining
            tries = 0

            async def attempt() -> None:
                nonlocal tries
                tries += 1
                # a try after an outage checks for a recorded result first, as a redelivery
                await node_runner().run(env, ev, redelivered=redelivered or tries > 1)

            try:
                # NATS away for a moment (a cluster node killed) is waited out here: it must
                # not use up the message's deliveries.
                await through_outages(attempt, None, f"node {ev.node_label}")
            except Exception as exc:
                log.exception("node %s could not be run or recorded", ev.node_label)
                failures.append(f"{type(exc).__name__}: {exc}")
            finally:
                remaining -= 1
                if remaining == 0:
                    done.set()

        for i, (env, ev) in enumerate(work):

            async def job(_slot: int, env: Envelope = env, ev: NodeDispatched = ev) -> None:
                await one(env, ev)

            runtime.io.submit(owner, f"node:{seq}:{i}", job)

    async def dispatch_poisoned(envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        await fail_dispatches(ctx.event_log, envelopes, why)

    async def tool_poisoned(envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        await tool_calls().give_up(envelopes or [], why)

    async def on_items(envelopes: list[Envelope], msg: Msg) -> None:
        await tool_calls().on_items(envelopes, msg)

    async def on_cancel(msg: Msg) -> None:
        await tool_calls().on_cancel_broadcast(msg)

    async def list_mcp(msg: Msg) -> None:
        clock = time.perf_counter()
        try:
            request = _decode_list(msg.data)
        except msgspec.DecodeError as exc:
            await msg.respond(msgspec.json.encode({"errors": {"request": str(exc)}}))
            return
        reply = await runtime.mcp.list_tools(
            request.owner_id, request.connections, max(0.5, min(request.timeout_s, 120.0))
        )
        reply.elapsed_ms = round((time.perf_counter() - clock) * 1000, 3)
        await msg.respond(msgspec.json.encode(reply))

    ctx.add_responder(MCP_LIST_SUBJECT, list_mcp)
    ctx.add_broadcast(TOOL_CANCEL_BROADCAST, on_cancel)
    # manual_ack: the handlers only queue; each piece of work acks itself when it is done.
    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="work",
            subject=subjects.work_for(ctx.service),
            handle=on_nodes,
            ack_wait_s=ACK_WAIT_S,
            max_deliver=MAX_DELIVER,
            manual_ack=True,
            on_poison=dispatch_poisoned,
        )
    )
    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="tools",
            subject=subjects.work_items_for(ctx.service),
            handle=on_items,
            ack_wait_s=ACK_WAIT_S,
            max_deliver=MAX_DELIVER,
            manual_ack=True,
            on_poison=tool_poisoned,
        )
    )
