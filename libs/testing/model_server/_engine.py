"""The server's thread-safe state (script, rule use counts, ledger) and its HTTP-free answers."""

from __future__ import annotations

import threading
import time
from typing import Any

import msgspec

from libs.testing.model_server._matching import matches
from libs.testing.model_server._request import ChatRequest, InvalidRequest
from libs.testing.model_server._responses import (
    Answer,
    completion_body,
    error_body,
    render,
    stream_events,
)
from libs.testing.model_server._script import Reply, Rule, Script

OWNER = "heym-test"


class LedgerEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One request as the server saw it; `response` is the JSON answered (or, for a stream,
    the equivalent non-streamed body)."""

    seq: int
    received_at: float
    method: str
    path: str
    body: Any
    status: int
    rule_index: int | None = None
    rule_name: str | None = None
    response: Any = None


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What the HTTP layer must send, after waiting `delay` seconds."""

    status: int
    body: Any = None
    events: list[bytes] | None = None
    headers: dict[str, str] = {}
    delay: float = 0.0


class Engine:
    """Everything the HTTP handlers share. One re-entrant lock guards it all: handlers run on
    the server's loop thread while tests read the ledger and swap scripts from theirs, and a
    predicate may itself read the ledger."""

    def __init__(self, script: Script) -> None:
        self._lock = threading.RLock()
        self._script = script
        self._uses = [0] * len(script.rules)
        self._ledger: list[LedgerEntry] = []
        self._seq = 0

    @property
    def script(self) -> Script:
        with self._lock:
            return self._script

    def replace_script(self, script: Script) -> None:
        """Swap the script; `times` budgets start afresh, the ledger is kept."""
        with self._lock:
            self._script = script
            self._uses = [0] * len(script.rules)

    def ledger(self) -> list[LedgerEntry]:
        with self._lock:
            return list(self._ledger)

    def clear_ledger(self) -> None:
        with self._lock:
            self._ledger.clear()

    def chat(self, raw: bytes, *, arrived: float | None = None) -> Outcome:
        """Answer one POST /v1/chat/completions body. `arrived`: when the request reached the
        server, before its body was parsed (the ledger's `received_at`)."""
        path = "/v1/chat/completions"
        try:
            body = msgspec.json.decode(raw)
            if not isinstance(body, dict):
                raise InvalidRequest("the body must be a JSON object")
            request = ChatRequest(body)
        except (msgspec.DecodeError, InvalidRequest) as exc:
            outcome = Outcome(status=400, body=error_body(str(exc), "invalid_request_error"))
            logged = raw.decode(errors="replace")
            return self._record("POST", path, logged, outcome, None, outcome.body, arrived=arrived)
        with self._lock:
            try:
                index, rule = self._choose(request)
            except Exception as exc:  # a failing in-process predicate is a test bug: say so
                message = f"[model-server] predicate raised {exc!r}"
                outcome = Outcome(status=500, body=error_body(message, "server_error"))
                return self._record(
                    "POST", path, body, outcome, None, outcome.body, arrived=arrived
                )
            script = self._script
            seq = self._seq + 1
            if rule is None:
                outcome, logged_response = self._unmatched(request, script, seq)
            else:
                outcome, logged_response = self._scripted(rule.reply, request, script, seq)
            return self._record(
                "POST", path, body, outcome, rule, logged_response, index, arrived=arrived
            )

    def model(self, model_id: str) -> Outcome:
        body = self._model_card(model_id)
        return self._record("GET", f"/v1/models/{model_id}", None, Outcome(status=200, body=body))

    def models(self) -> Outcome:
        names = list(self.script.context_windows) or ["heym-test-model"]
        body = {"object": "list", "data": [self._model_card(name) for name in names]}
        return self._record("GET", "/v1/models", None, Outcome(status=200, body=body))

    def _model_card(self, model_id: str) -> dict[str, Any]:
        window = self.script.context_window(model_id)
        card = {"id": model_id, "object": "model", "created": 0, "owned_by": OWNER}
        return {**card, "context_window": window}

    def _choose(self, request: ChatRequest) -> tuple[int | None, Rule | None]:
        # Matching and counting happen under one lock so that concurrent requests can never
        # both consume the last use of a `times`-limited rule.
        for index, rule in enumerate(self._script.rules):
            if rule.times is not None and self._uses[index] >= rule.times:
                continue
            if matches(rule.when, request):
                self._uses[index] += 1
                return index, rule
        return None, None

    def _unmatched(self, request: ChatRequest, script: Script, seq: int) -> tuple[Outcome, Any]:
        if script.unmatched_status != 200:
            body = error_body(script.unmatched_text, "server_error", script.unmatched_status)
            return Outcome(status=script.unmatched_status, body=body), body
        answer = Answer(content=script.unmatched_text, tool_calls=[], finish_reason="stop")
        return self._success(answer, request, seq, script.latency)

    def _scripted(
        self, reply: Reply, request: ChatRequest, script: Script, seq: int
    ) -> tuple[Outcome, Any]:
        delay = script.hang_seconds if reply.hang else reply.delay
        delay = script.latency if delay is None else delay
        if reply.error is not None:
            error = reply.error
            body = error.body
            if body is None:
                body = error_body(error.message, error.type, error.status)
            outcome = Outcome(status=error.status, body=body, headers=error.headers, delay=delay)
            return outcome, body
        return self._success(render(reply, request, seq), request, seq, delay)

    def _success(
        self, answer: Answer, request: ChatRequest, seq: int, delay: float
    ) -> tuple[Outcome, Any]:
        completion_id = f"chatcmpl-heym{seq:06d}"
        created = int(time.time())
        body = completion_body(answer, request, completion_id, created)
        if request.stream:
            events = stream_events(answer, request, completion_id, created)
            return Outcome(status=200, events=events, delay=delay), body
        return Outcome(status=200, body=body, delay=delay), body

    def _record(
        self,
        method: str,
        path: str,
        body: Any,
        outcome: Outcome,
        rule: Rule | None = None,
        response: Any = None,
        index: int | None = None,
        *,
        arrived: float | None = None,
    ) -> Outcome:
        with self._lock:
            self._seq += 1
            entry = LedgerEntry(
                seq=self._seq,
                received_at=arrived or time.time(),
                method=method,
                path=path,
                body=body,
                status=outcome.status,
                rule_index=index,
                rule_name=rule.name if rule is not None else None,
                response=response if response is not None else outcome.body,
            )
            self._ledger.append(entry)
        return outcome
