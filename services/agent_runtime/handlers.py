"""The agent runtime's NATS edge: agent and llm invocations (`heym.run.*.sched.agent_runtime`).

Scheduler dispatches (`NodeDispatched`) and orchestrators' sub-agent calls
(`SubAgentDispatched`) arrive on the same durable consumer; each invocation runs its
event-sourced loop. Many run at once: a loop mostly waits on the model or on tools.
"""

from __future__ import annotations

import asyncio
import logging

from nats.aio.msg import Msg

from contracts import subjects
from contracts.agents import SubAgentDispatched
from contracts.base import Envelope
from contracts.nodes import NodeDispatched
from libs.secrets import SecretBox
from libs.secrets.credentials import ResolvedCredential, load_credential
from libs.service import ServiceContext
from libs.service.work import WorkConsumer, kept_alive
from services.agent_runtime.call import AgentCall
from services.agent_runtime.loop import AgentLoop
from services.agent_runtime.model import ModelClients
from services.agent_runtime.tools.runner import ToolRunner

log = logging.getLogger(__name__)

# A crashed worker's dispatch is redelivered after ack_wait; long work keeps it alive.
KEEPALIVE_S = 3.0
ACK_WAIT_S = 10.0


def register(ctx: ServiceContext) -> None:
    box = SecretBox.from_setting(ctx.settings.require_secret_key())
    models = ModelClients(timeout_s=ctx.settings.model_timeout_s)
    ctx.on_close(models.close)
    loop: AgentLoop | None = None

    async def resolve(credential_id: str, owner_id: str) -> ResolvedCredential | None:
        return await load_credential(ctx.pool, box, credential_id, owner_id)

    def get_loop() -> AgentLoop:
        nonlocal loop
        if loop is None:
            loop = AgentLoop(ctx.event_log, models, resolve, ToolRunner(ctx.event_log, ctx.nc))
        return loop

    async def on_work(envelopes: list[Envelope], msg: Msg) -> None:
        calls: list[AgentCall] = []
        for env in envelopes:
            ev = env.event
            if isinstance(ev, NodeDispatched) and ev.service == ctx.service:
                calls.append(AgentCall.from_dispatch(env, ev))
            elif isinstance(ev, SubAgentDispatched):
                calls.append(AgentCall.from_sub_agent(env, ev))
        if not calls:
            return
        async with kept_alive(msg, KEEPALIVE_S):
            await asyncio.gather(*(get_loop().run(c) for c in calls))

    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="work",
            subject=subjects.work_for(ctx.service),
            handle=on_work,
            max_workers=128,
            ack_wait_s=ACK_WAIT_S,
        )
    )
