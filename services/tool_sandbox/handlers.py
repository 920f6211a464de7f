"""The tool sandbox's NATS edge: node invocations sent to `heym.run.*.sched.tool_sandbox`.

Each invocation's result is appended to the invocation's own subject with expected sequence
0, so exactly one result is recorded even if the dispatch is delivered twice; a redelivered
dispatch whose result is already recorded is not executed again.
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
from contracts.tools import TOOL_SUBJECT
from libs.service import ServiceContext
from libs.service.work import WorkConsumer, kept_alive
from services.tool_sandbox.nodes import NodeRunner, as_dispatch
from services.tool_sandbox.tools import answer_tool_request

log = logging.getLogger(__name__)

# A crashed worker's dispatch is redelivered after ack_wait; long work keeps it alive.
KEEPALIVE_S = 3.0
ACK_WAIT_S = 10.0


def register(ctx: ServiceContext) -> None:
    runner: NodeRunner | None = None

    def get_runner() -> NodeRunner:
        nonlocal runner
        if runner is None:
            client = httpx.AsyncClient(limits=httpx.Limits(max_connections=100))
            ctx.on_close(client.aclose)
            runner = NodeRunner(
                ctx.event_log,
                client,
                http_timeout_s=ctx.settings.http_timeout_s,
                http_max_response_bytes=ctx.settings.http_max_response_bytes,
            )
        return runner

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

    async def run_tool(msg: Msg) -> None:
        await msg.respond(await answer_tool_request(msg.data))

    ctx.add_responder(TOOL_SUBJECT, run_tool)

    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="work",
            subject=subjects.work_for(ctx.service),
            handle=on_work,
            max_workers=64,
            ack_wait_s=ACK_WAIT_S,
        )
    )
