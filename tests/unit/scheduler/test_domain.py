"""The scheduler's fold and decisions on Heym's semantics (§2), with stand-in executors."""

from __future__ import annotations

import pytest

from contracts.nodes import NodeDispatched, NodeRetryScheduled, TimerScheduled
from contracts.runs import RunOutputReady, RunStarted, WorkflowSnapshot
from tests.unit.scheduler.driver import Fail, drive, edge, node

pytestmark = pytest.mark.unit


def test_pure_chain_is_one_decision() -> None:
    nodes = [node("in", "textInput", "input")]
    edges = []
    prev = "in"
    for i in range(50):
        value = "$input.n" if i == 0 else "$input.v + 1"
        nodes.append(node(f"s{i}", "set", f"step{i}", mappings=[{"key": "v", "value": value}]))
        edges.append(edge(prev, f"s{i}"))
        prev = f"s{i}"
    t = drive(nodes, edges, inputs={"headers": {}, "query": {}, "body": {"n": 0}})
    assert t.completed.outputs == {"step49": {"v": 49}}
    # RunStarted, 51 results and RunCompleted are one decision (one append)
    assert len(t.decisions) == 1
    assert isinstance(t.decisions[0][0], RunStarted)
    assert len(t.decisions[0]) == 53


def test_condition_skips_exclusive_branch_and_runs_shared_join_once() -> None:
    nodes = [
        node("in", "textInput", "input"),
        node("c", "condition", "check", condition="$input.n > 5"),
        node("t", "set", "big", mappings=[{"key": "kind", "value": "big"}]),
        node("f", "set", "small", mappings=[{"key": "kind", "value": "small"}]),
        node("j", "merge", "join"),
    ]
    edges = [
        edge("in", "c"),
        edge("c", "t", "true"),
        edge("c", "f", "false"),
        edge("t", "j"),
        edge("f", "j"),
    ]
    t = drive(nodes, edges, inputs={"body": {"n": 3}})
    assert t.statuses() == {
        "input": ["success"],
        "check": ["success"],
        "big": ["skipped"],
        "small": ["success"],
        "join": ["success"],
    }
    assert t.results("join")[0].output == {"merged": {"small": {"kind": "small"}}}
    assert t.completed.outputs == {"join": {"merged": {"small": {"kind": "small"}}}}


def test_condition_error_routes_false() -> None:
    nodes = [
        node("c", "condition", "check", condition="$nothing.x.y > 1 &&"),
        node("t", "set", "yes"),
        node("f", "set", "no"),
    ]
    t = drive(nodes, [edge("c", "t", "true"), edge("c", "f", "false")])
    assert t.results("check")[0].output == {"branch": "false"}
    assert t.statuses()["yes"] == ["skipped"]


def test_switch_routes_first_match_else_default() -> None:
    nodes = [
        node("in", "textInput", "input"),
        node("s", "switch", "route", expression="$input.text", cases=["a", "b", "b"]),
        node("a", "set", "A"),
        node("b", "set", "B"),
        node("d", "set", "D"),
    ]
    edges = [
        edge("in", "s"),
        edge("s", "a", "case-0"),
        edge("s", "b", "case-1"),
        edge("s", "d", "default"),
    ]
    t = drive(nodes, edges, inputs={"body": {"text": "b"}})
    assert t.statuses() == {
        "input": ["success"],
        "route": ["success"],
        "A": ["skipped"],
        "B": ["success"],
        "D": ["skipped"],
    }
    t = drive(nodes, edges, inputs={"body": {"text": "zzz"}})
    assert t.statuses()["D"] == ["success"]


def test_loop_collects_loop_back_inputs_and_runs_done_once() -> None:
    nodes = [
        node("in", "textInput", "input"),
        node("l", "loop", "each", arrayExpression="$input.items"),
        node("b", "set", "body", mappings=[{"key": "doubled", "value": "$each.item * 2"}]),
        node(
            "v",
            "variable",
            "collect",
            variableName="seen",
            variableValue="$vars.seen.add($each.item)",
            variableType="array",
        ),
        node(
            "d",
            "set",
            "after",
            mappings=[
                {"key": "n", "value": "$each.results.length"},
                {"key": "seen", "value": "$vars.seen"},
            ],
        ),
    ]
    edges = [
        edge("in", "l"),
        edge("l", "b", "loop"),
        edge("b", "v"),
        edge("v", "l", None, "loop"),
        edge("l", "d", "done"),
    ]
    t = drive(nodes, edges, inputs={"body": {"items": [1, 2]}})
    loop_rows = [r for r in t.results("each") if r.status == "success"]
    assert [r.output["branch"] for r in loop_rows] == ["loop", "loop", "done"]
    assert [r.status for r in t.results("after")].count("success") == 1
    assert loop_rows[-1].output["total"] == 2
    assert len(loop_rows[-1].output["results"]) == 2
    after = next(r for r in t.results("after") if r.status == "success")
    assert after.output == {"n": 2, "seen": [1, 2]}
    assert [r.output["doubled"] for r in t.results("body") if r.status == "success"] == [2, 4]


def test_parallel_side_effects_are_dispatched_together() -> None:
    nodes = [
        node("a", "http", "callA", curl="curl http://a"),
        node("b", "http", "callB", curl="curl http://b"),
        node("m", "merge", "join"),
    ]
    t = drive(nodes, [edge("a", "m"), edge("b", "m")])
    dispatched = t.of(NodeDispatched)
    assert {d.node_label for d in dispatched} == {"callA", "callB"}
    assert all(d.service == "tool_sandbox" for d in dispatched)
    assert set(t.results("join")[0].output["merged"]) == {"callA", "callB"}


def test_retry_then_success_records_retry_and_attempts() -> None:
    calls = {"n": 0}

    def flaky(ev: NodeDispatched) -> dict[str, int]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise Fail("boom")
        return {"ok": ev.attempt}

    nodes = [
        node(
            "h",
            "http",
            "call",
            curl="curl http://x",
            retryEnabled=True,
            retryMaxAttempts=3,
            retryWaitSeconds=2,
        )
    ]
    t = drive(nodes, [], executors={"call": flaky})
    (retry,) = t.of(NodeRetryScheduled)
    assert (retry.attempt, retry.max_attempts, retry.wait_s, retry.error) == (1, 3, 2.0, "boom")
    timer = next(e for e in t.of(TimerScheduled) if e.purpose == "retry")
    assert timer.timer_id == retry.timer_id
    assert t.results("call")[-1].output == {"ok": 2}
    assert t.completed.status == "success"


def test_final_failure_fails_the_run_with_error_output() -> None:
    def always(ev: NodeDispatched) -> None:
        raise Fail("down")

    nodes = [
        node(
            "h",
            "http",
            "call",
            curl="curl http://x",
            retryEnabled=True,
            retryMaxAttempts=2,
            retryWaitSeconds=0,
        ),
        node("n", "set", "next"),
    ]
    t = drive(nodes, [edge("h", "n")], executors={"call": always})
    assert t.completed.status == "error"
    assert t.completed.error == "down"
    assert t.completed.outputs == {"error": "down"}
    assert "next" not in t.statuses()
    assert len(t.of(NodeRetryScheduled)) == 1


def test_error_handle_runs_only_on_error() -> None:
    nodes = [
        node("h", "http", "call", curl="curl http://x", onErrorEnabled=True),
        node("ok", "set", "onSuccess"),
        node("err", "set", "onError", mappings=[{"key": "why", "value": "$call.error"}]),
    ]
    edges = [edge("h", "ok"), edge("h", "err", "error")]
    t = drive(nodes, edges)
    assert t.statuses() == {"call": ["success"], "onSuccess": ["success"], "onError": ["skipped"]}

    def broken(ev: NodeDispatched) -> None:
        raise Fail("nope")

    t = drive(nodes, edges, executors={"call": broken})
    assert t.statuses() == {"call": ["success"], "onSuccess": ["skipped"], "onError": ["success"]}
    assert t.results("call")[0].output == {"error": "nope", "_errorBranch": True}
    assert t.results("onError")[0].output == {"why": "nope"}
    assert t.completed.status == "success"


def test_error_handler_flow_supplies_outputs() -> None:
    nodes = [
        node("h", "http", "call", curl="curl http://x"),
        node("eh", "errorHandler", "onFail"),
        node(
            "o",
            "output",
            "report",
            message="failed at $onFail.error.node_label: $onFail.error.message",
        ),
    ]
    t = drive(
        nodes,
        [edge("eh", "o")],
        executors={"call": lambda ev: (_ for _ in ()).throw(Fail("kaput"))},
    )
    assert t.completed.status == "error"
    assert t.completed.outputs == {"report": {"result": "failed at call: kaput"}}


def test_throw_error_passes_http_status_and_is_not_retried() -> None:
    nodes = [
        node("in", "textInput", "request"),
        node(
            "x",
            "throwError",
            "stop",
            errorMessage="bad $input.text $nope.x",
            httpStatusCode=422,
            retryEnabled=True,
        ),
    ]
    t = drive(nodes, [edge("in", "x")], inputs={"body": {"text": "input"}})
    assert t.completed.status == "error"
    assert t.completed.http_status == 422
    # a span resolving to null stays as its literal text (Heym's template rule)
    assert t.completed.error == "bad input $nope.x"
    assert not t.of(NodeRetryScheduled)


def test_in_flight_sibling_is_drained_not_dropped() -> None:
    nodes = [
        node("a", "throwError", "fail"),
        node("b", "http", "slow", curl="curl http://x"),
        node("c", "set", "afterSlow"),
    ]
    t = drive(nodes, [edge("b", "c")])
    assert t.completed.status == "error"
    assert t.statuses()["slow"] == ["success"]  # its result is recorded
    assert "afterSlow" not in t.statuses()  # nothing new starts after the failure


def test_json_output_mapper_alone_unwraps_outputs() -> None:
    nodes = [
        node("in", "textInput", "input"),
        node("m", "jsonOutputMapper", "api", mappings=[{"key": "answer", "value": "$input.q"}]),
    ]
    t = drive(nodes, [edge("in", "m")], inputs={"body": {"q": 42}})
    assert t.completed.outputs == {"answer": 42}
    nodes.append(node("side", "set", "side", mappings=[{"key": "x", "value": "1"}]))
    t = drive(nodes, [edge("in", "m"), edge("in", "side")], inputs={"body": {"q": 42}})
    assert t.completed.outputs == {"api": {"answer": 42}, "side": {"x": "1"}}


def test_output_allow_downstream_signals_early_return() -> None:
    nodes = [
        node("in", "textInput", "request"),
        node("o", "output", "early", message="hi", allowDownstream=True),
        node("n", "set", "later"),
    ]
    t = drive(nodes, [edge("in", "o"), edge("o", "n")])
    (ready,) = t.of(RunOutputReady)
    assert ready.outputs == {"early": {"result": "hi"}}
    assert t.statuses()["later"] == ["success"]


def test_disabled_nodes_are_skipped_and_successors_still_run() -> None:
    nodes = [
        node("a", "set", "first"),
        node("b", "set", "off", active=False),
        node("c", "set", "third"),
    ]
    t = drive(nodes, [edge("a", "b"), edge("b", "c")])
    assert t.statuses() == {"first": ["success"], "off": ["skipped"], "third": ["success"]}


def test_disable_node_applies_to_this_run_only() -> None:
    nodes = [
        node("d", "disableNode", "switchOff", targetNodeLabel="target"),
        node("t", "set", "target"),
    ]
    t = drive(nodes, [edge("d", "t")])
    assert t.statuses()["target"] == ["skipped"]


def test_wait_node_is_a_durable_timer() -> None:
    nodes = [
        node("in", "textInput", "input"),
        node("w", "wait", "pause", duration=2000),
        node("o", "set", "after", mappings=[{"key": "t", "value": "$pause.text"}]),
    ]
    t = drive(nodes, [edge("in", "w"), edge("w", "o")], inputs={"body": {"text": "hi"}})
    (timer,) = t.of(TimerScheduled)
    assert timer.purpose == "wait"
    assert t.results("after")[0].output == {"t": "hi"}
    # its result spans the wait, from when the timer was set (history draws it as a gap)
    (waited,) = t.results("pause")
    assert waited.started_at_ms == timer.fire_at_ms - 2000


def test_pinned_data_in_test_mode_drives_branches() -> None:
    nodes = [
        node("c", "condition", "check", condition="true", pinnedData={"branch": "false"}),
        node("t", "set", "yes"),
        node("f", "set", "no"),
    ]
    edges = [edge("c", "t", "true"), edge("c", "f", "false")]
    assert drive(nodes, edges, test_run=True).statuses()["yes"] == ["skipped"]
    assert drive(nodes, edges, test_run=False).statuses()["no"] == ["skipped"]


def test_execute_node_depth_limit() -> None:
    child = WorkflowSnapshot(id="child", nodes=[node("x", "set", "x")], edges=[])
    nodes = [node("e", "execute", "sub", executeWorkflowId="child")]
    ok = drive(nodes, [], cache={"child": child}, depth=4)
    assert ok.completed.status == "success"
    too_deep = drive(nodes, [], cache={"child": child}, depth=5)
    assert too_deep.completed.status == "error"
    assert "depth limit of 5" in (too_deep.completed.error or "")
    missing = drive(nodes, [], cache={})
    assert "does not exist" in (missing.completed.error or "")


def test_cancel_completes_the_run_and_starts_nothing_more() -> None:
    nodes = [
        node("a", "http", "first", curl="curl http://x"),
        node("b", "http", "second", curl="curl http://y"),
    ]
    t = drive(nodes, [edge("a", "b")], cancel_after=0)
    assert t.completed.status == "cancelled"
    assert "second" not in {d.node_label for d in t.of(NodeDispatched)}
