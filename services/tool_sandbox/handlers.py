"""The tool sandbox's NATS edge: two consumers.

- `tool_sandbox-work` on `heym.run.*.sched.tool_sandbox`: node invocations the scheduler
  dispatched (`http` nodes). Each result is appended to the invocation's own subject with
  expected sequence 0, so exactly one result is recorded even if the dispatch is delivered
  twice; a redelivered dispatch whose result is already recorded is not executed again.
- `tool_sandbox-tools` on `heym.work.*.tool_sandbox.*`: agents' tool calls (`work_items.py`).
"""

from __future__ import annotations

import asyncio
import logging

import httpx
from nats.aio.msg import Msg

from contracts import subjects
from contracts.agents import NodeToolDispatched
from contracts.base import Envelope
from contracts.nodes import NodeDispatched
from libs.service import ServiceContext
from libs.service.failures import fail_dispatches
from libs.service.work import WorkConsumer, kept_alive
from services.tool_sandbox.nodes import CredentialSource, NodeRunner, as_dispatch
from services.tool_sandbox.work_items import ToolWork

log = logging.getLogger(__name__)

# A crashed worker's dispatch is redelivered after ack_wait; long work keeps it alive.
KEEPALIVE_S = 3.0
ACK_WAIT_S = 10.0


def register(ctx: ServiceContext) -> None:
    runner: NodeRunner | None = None
    tools: ToolWork | None = None
    client: httpx.AsyncClient | None = None

    def get_client() -> httpx.AsyncClient:
        nonlocal client
        if client is None:
            client = httpx.AsyncClient(limits=httpx.Limits(max_connections=100))
            ctx.on_close(client.aclose)
        return client

    def get_runner() -> NodeRunner:
        nonlocal runner
        if runner is None:
            runner = NodeRunner(ctx.event_log, get_client(), credentials=CredentialSource(ctx.nc))
        return runner

    def get_tools() -> ToolWork:
        nonlocal tools
        if tools is None:
            tools = ToolWork(ctx.event_log, get_client())
        return tools

    async def on_work(envelopes: list[Envelope], msg: Msg) -> None:
        work = [
            (env, env.event)
            for env in envelopes
            if (isinstance(env.event, NodeDispatched) and env.event.service == ctx.service)
            or isinstance(env.event, NodeToolDispatched)
        ]
        if not work:
            return
        redelivered = msg.metadata.num_delivered > 1
        async with kept_alive(msg, KEEPALIVE_S):
            await asyncio.gather(
                *(
                    get_runner().run(env, as_dispatch(ev), redelivered=redelivered)
                    for env, ev in work
                )
            )

    async def dispatch_poisoned(envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        await fail_dispatches(ctx.event_log, envelopes, why)

    async def tool_poisoned(envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        await get_tools().give_up(envelopes or [], why)

    async def on_tool(envelopes: list[Envelope], msg: Msg) -> None:
        async with kept_alive(msg, KEEPALIVE_S):
            await get_tools().handle(envelopes, msg)

    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="work",
            subject=subjects.work_for(ctx.service),
            handle=on_work,
            max_workers=64,
            ack_wait_s=ACK_WAIT_S,
            on_poison=dispatch_poisoned,
        )
    )
    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="tools",
            subject=subjects.work_items_for(ctx.service),
            handle=on_tool,
            max_workers=64,
            ack_wait_s=ACK_WAIT_S,
            on_poison=tool_poisoned,
        )
    )
