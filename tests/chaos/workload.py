"""A mixed workload for replicas and chaos: branches, waits, HTTP side effects, agents with
sub-agents, human reviews decided by the driver.

Runs are started by appending their `RunRequested` straight to the log (as the cron starter
does) with a run id fixed by the run's index, so a start retried after a failure (a gateway or
a NATS node killed mid-request) starts the run once. Every run's HTTP side effect goes to the
test server's `/idem/<run>-<kind>` with the node's `Idempotency-Key`: a node executed again
after a crash counts once, a second execution counted as new is a duplicated side effect.
Completions and pauses are read from the log (`heym.run.*.sched.*`) by polling bounded
reads, which survive reconnects to any node of a cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx
import nats
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.runs import RunCompleted, RunPaused, RunRequested
from libs.db.pool import init_connection
from libs.db.workflows import load_snapshot, workflow_cache
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, e, model_credential, n
from tests.e2e.system import System

KINDS = ("branch", "wait", "agent", "review")
# Decisions (a run's end or pause can share a message with a dispatch).
ENDS = "heym.run.*.sched.*"


def model_script() -> Script:
    return Script(
        rules=[
            Rule(
                name="orchestrate",
                when=Match(tool_offered="call_sub_agent", assistant_turns=0),
                reply=Reply(
                    tool_calls=[
                        ToolCall(
                            "call_sub_agent", {"sub_agent_label": "helper", "prompt": "help-me"}
                        )
                    ]
                ),
            ),
            Rule(name="helper", when=Match(last_user_contains="help-me"), reply=Reply(text="ok")),
            Rule(
                name="orchestrated",
                when=Match(tool_result_for="call_sub_agent"),
                reply=Reply(text="orchestrated"),
            ),
            Rule(
                name="draft",
                when=Match(tool_offered="request_human_review", assistant_turns=0),
                reply=Reply(
                    tool_calls=[
                        ToolCall(
                            "request_human_review",
                            {"summary": "send it", "review_markdown": "draft", "reason": "r"},
                        )
                    ]
                ),
            ),
            Rule(
                name="reviewed",
                when=Match(tool_result_for="request_human_review"),
                reply=Reply(text="reviewed"),
            ),
        ]
    )


def _http(nid: str, label: str, url: str) -> dict[str, Any]:
    return n(nid, "http", label, curl=f"curl {url}/idem/$in.tag-{label}")


def _done(label: str, **mappings: str) -> dict[str, Any]:
    return n(
        f"s_{label}",
        "set",
        label,
        mappings=[{"key": k, "value": v} for k, v in mappings.items()],
    )


def graphs(url: str, cred: str) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Each kind's workflow; every one ends in an output `answer` with deterministic values."""
    inp = n("in", "textInput", "in")
    out = n("o", "output", "answer", outputSchema=[{"key": "r", "value": "$result"}])
    branch = (
        [
            inp,
            n("c", "condition", "isEven", condition="$in.n % 2 == 0"),
            _http("he", "even", url),
            _http("ho", "odd", url),
            _done("evenDone", branch="even", count="$even.body.count"),
            _done("oddDone", branch="odd", count="$odd.body.count"),
            n("m", "merge", "join"),
            n("o", "output", "answer", outputSchema=[{"key": "r", "value": "$join.merged"}]),
        ],
        [
            e("in", "c"),
            {"id": "ct", "source": "c", "target": "he", "sourceHandle": "true"},
            {"id": "cf", "source": "c", "target": "ho", "sourceHandle": "false"},
            e("he", "s_evenDone"),
            e("ho", "s_oddDone"),
            e("s_evenDone", "m"),
            e("s_oddDone", "m"),
            e("m", "o"),
        ],
    )
    wait = (
        [
            inp,
            n("w", "wait", "pause", duration=300),
            _http("h", "waited", url),
            _done("result", count="$waited.body.count", n="$in.n"),
            out,
        ],
        [e("in", "w"), e("w", "h"), e("h", "s_result"), e("s_result", "o")],
    )
    agents = (
        [
            inp,
            agent(
                "a",
                "planner",
                cred,
                isOrchestrator=True,
                subAgentLabels=["helper"],
                userMessage="plan $in.n",
            ),
            agent("sub", "helper", cred, userMessage="$input.text"),
            _http("h", "called", url),
            _done("result", text="$planner.text", count="$called.body.count"),
            out,
        ],
        [
            e("in", "a"),
            e("a", "sub", source_handle="sub-agents", target_handle="sub-agent-input"),
            e("a", "h"),
            e("h", "s_result"),
            e("s_result", "o"),
        ],
    )
    review = (
        [
            inp,
            agent(
                "wr",
                "writer",
                cred,
                hitlEnabled=True,
                hitlSummary="Ask before sending.",
                userMessage="write $in.n",
            ),
            _http("h", "sent", url),
            _done("result", text="$writer.text", count="$sent.body.count"),
            out,
        ],
        [e("in", "wr"), e("wr", "h"), e("h", "s_result"), e("s_result", "o")],
    )
    return {"branch": branch, "wait": wait, "agent": agents, "review": review}


def expected_outputs(kind: str, i: int) -> dict[str, Any]:
    """What one replica answers for run `i` of `kind` (checked on one replica, see the tests)."""
    if kind == "branch":
        label, name = ("evenDone", "even") if i % 2 == 0 else ("oddDone", "odd")
        return {"answer": {"result": {"r": {label: {"branch": name, "count": 1}}}}}
    if kind == "wait":
        return {"answer": {"result": {"r": {"count": 1, "n": i}}}}
    if kind == "agent":
        return {"answer": {"result": {"r": {"text": "orchestrated", "count": 1}}}}
    return {"answer": {"result": {"r": {"text": "reviewed", "count": 1}}}}


def side_effect_names(kind: str, run_id: str, i: int) -> list[str]:
    if kind == "branch":
        return [f"{run_id}-{'even' if i % 2 == 0 else 'odd'}"]
    return [f"{run_id}-{ {'wait': 'waited', 'agent': 'called', 'review': 'sent'}[kind] }"]


@dataclass
class Run:
    index: int
    kind: str
    run_id: str
    started_at: float = 0.0
    ended_at: float | None = None
    completed: RunCompleted | None = None
    paused: RunPaused | None = None
    decided: bool = False


@dataclass
class Workload:
    system: System
    target: HttpTarget
    model: ModelServer
    seed: int
    runs: list[Run] = field(default_factory=list)
    requests: dict[str, RunRequested] = field(default_factory=dict)
    key: str = ""
    start_errors: int = 0

    async def prepare(self, count: int) -> None:
        """Create the user, the credential and one workflow per kind; snapshot them."""
        _, self.key = await self.system.new_user()
        async with self.system.client(self.key) as c:
            cred = await model_credential(c, self.model)
            ids = {}
            for kind, (nodes, edges) in graphs(self.target.url, cred).items():
                r = await c.post(
                    "/api/workflows", json={"name": f"chaos-{kind}", "nodes": nodes, "edges": edges}
                )
                assert r.status_code == 201, r.text
                ids[kind] = str(r.json()["id"])

        conn = await asyncpg.connect(self.system.database_url)
        await init_connection(conn)  # jsonb codecs
        try:
            for kind, wid in ids.items():
                loaded = await load_snapshot(conn, wid)
                assert loaded is not None
                snapshot, owner_id = loaded
                self.requests[kind] = RunRequested(
                    workflow_id=snapshot.id,
                    workflow_name=snapshot.name,
                    owner_id=owner_id,
                    nodes=snapshot.nodes,
                    edges=snapshot.edges,
                    workflow_cache=await workflow_cache(conn, owner_id, snapshot),
                    trigger_source="API",
                )
        finally:
            await conn.close()
        space = uuid.uuid5(uuid.NAMESPACE_URL, f"heym-chaos-{self.seed}-{time.time_ns()}")
        self.runs = [
            Run(i, KINDS[i % len(KINDS)], uuid.uuid5(space, str(i)).hex) for i in range(count)
        ]

    def request(self, run: Run) -> RunRequested:
        base = self.requests[run.kind]
        inputs = {"headers": {}, "query": {}, "body": {"n": run.index, "tag": run.run_id}}
        return RunRequested(
            workflow_id=base.workflow_id,
            workflow_name=base.workflow_name,
            owner_id=base.owner_id,
            nodes=base.nodes,
            edges=base.edges,
            workflow_cache=base.workflow_cache,
            trigger_source=base.trigger_source,
            inputs=inputs,
            requested_at_ms=int(time.time() * 1000),
        )

    async def start(self, log: EventLog, run: Run) -> None:
        """Append the run's request once, whatever fails in between (fixed id, expected 0)."""
        run.started_at = time.monotonic()
        while True:
            try:
                await log.append(
                    subjects.run_commands(run.run_id),
                    [self.request(run)],
                    expected_sequence=0,
                    message_id=f"run-{run.run_id}",
                    correlation_id=run.run_id,
                )
                return
            except ConcurrencyConflict:
                return  # an earlier try landed
            except Exception:
                self.start_errors += 1
                await asyncio.sleep(0.5)

    async def drive(self, *, concurrency: int, deadline_s: float) -> None:
        """Start every run (at most `concurrency` unfinished at once), decide reviews, and
        return once all ended or the deadline passed."""
        servers = self.system.nats_url.split(",")
        nc = await nats.connect(servers=servers, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
        log = EventLog(nc)
        slots = asyncio.Semaphore(concurrency)
        by_id = {r.run_id: r for r in self.runs}
        ended = asyncio.Event()
        deadline = time.monotonic() + deadline_s

        async def starter() -> None:
            for run in self.runs:
                await slots.acquire()
                if time.monotonic() > deadline:
                    return
                await self.start(log, run)

        async def follower() -> None:
            after = 0
            reviews: set[asyncio.Task[None]] = set()
            while time.monotonic() < deadline:
                try:
                    found = await log.read(ENDS, after=after)
                except Exception:
                    await asyncio.sleep(0.5)
                    continue
                for env in found:
                    after = max(after, env.sequence)
                    run = by_id.get(env.run_id)
                    if run is None:
                        continue
                    if isinstance(env.event, RunCompleted) and run.completed is None:
                        run.completed = env.event
                        run.ended_at = time.monotonic()
                        slots.release()
                    elif isinstance(env.event, RunPaused) and not run.decided:
                        run.paused = env.event
                        run.decided = True
                        task = asyncio.create_task(self.decide(run))
                        reviews.add(task)
                        task.add_done_callback(reviews.discard)
                if all(r.completed is not None for r in self.runs):
                    ended.set()
                    return
                await asyncio.sleep(0.2)

        tasks = [asyncio.create_task(starter()), asyncio.create_task(follower())]
        try:
            await asyncio.wait_for(ended.wait(), max(1.0, deadline - time.monotonic()))
        except TimeoutError:
            pass
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(Exception):
                await nc.close()

    async def decide(self, run: Run) -> None:
        """Accept the run's review through the gateway, retrying while it is down."""
        assert run.paused is not None
        url = str(run.paused.review.get("reviewUrl", "")) if run.paused.review else ""
        token = url.rsplit("/review/", 1)[-1]
        while True:
            try:
                async with httpx.AsyncClient(base_url=self.system.base_url, timeout=10) as c:
                    r = await c.post(f"/api/hitl/{token}/decision", json={"action": "accept"})
                if r.status_code in (200, 201, 409):
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.5)


async def connect(system: System) -> NATS:
    return await nats.connect(servers=system.nats_url.split(","))
