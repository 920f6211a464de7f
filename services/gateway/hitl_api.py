"""Public human review endpoints (Heym §5.5), the token being the credential:
`GET /api/hitl/{token}` and `POST /api/hitl/{token}/decision`, and the review page
`GET|POST /review/{token}` (server-rendered HTML, plain forms, no script)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import State
from litestar.exceptions import HTTPException

from libs.review.decisions import DecisionRefused, Found, decide, find
from services.gateway import review_html
from services.gateway.bodies import json_body
from services.gateway.web.document import html_response

MAX_FORM_BYTES = 512 * 1024


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _view(found: Found) -> dict[str, Any]:
    row = found.row
    return {
        "request_id": row["request_id"],
        "workflow_name": row["workflow_name"],
        "agent_label": row["agent_label"],
        "summary": row["summary"],
        "original_draft_text": row["draft_text"],
        "status": "expired" if found.standing == "expired" else row["status"],
        "decision": row["decision"],
        "edited_text": row["edited_text"],
        "refusal_reason": row["refusal_reason"],
        "resolved_output": row["resolved_output"],
        "expires_at": _iso(row["expires_at"]),
        "resolved_at": _iso(row["resolved_at"]),
    }


class HitlController(Controller):
    path = "/api/hitl"
    tags = ["human review"]

    @get("/{token:str}", summary="A review request (public: the token is the credential)")
    async def request_view(self, request: Request[Any, Any, State], token: str) -> Response[Any]:
        ctx = request.app.state.ctx
        found = await find(ctx.pool, ctx.event_log, token)
        if found is None:
            raise HTTPException(status_code=404, detail="no review request for this link")
        view = _view(found)
        if found.standing != "pending":
            # Heym: 410 once the review is no longer pending; the body says how it ended.
            return Response({"detail": f"this review is {found.standing}", **view}, status_code=410)
        return Response(view)

    @post(
        "/{token:str}/decision",
        summary="Decide a review: accept, edit or refuse (once)",
        status_code=202,
    )
    async def decision(self, request: Request[Any, Any, State], token: str) -> Response[Any]:
        ctx = request.app.state.ctx
        body = await json_body(request, empty={})
        try:
            found, _ = await decide(ctx.pool, ctx.event_log, token, body)
        except DecisionRefused as refused:
            raise HTTPException(status_code=refused.status, detail=refused.detail) from None
        return Response({"request_id": found.request_id, "status": "resolved"}, status_code=202)


def _html(body: str, status: int = 200) -> Response[str]:
    return html_response(body, review_html.HEADERS, status)


class ReviewPageController(Controller):
    path = "/review"
    tags = ["human review"]
    include_in_schema = False

    @get("/{token:str}", summary="The review page")
    async def page(self, request: Request[Any, Any, State], token: str) -> Response[str]:
        ctx = request.app.state.ctx
        found = await find(ctx.pool, ctx.event_log, token)
        if found is None:
            return _html(review_html.ended_page("unknown"), 404)
        if found.standing != "pending":
            return _html(_ended(found), 410)
        return _html(review_html.review_form(found.row))

    @post("/{token:str}", summary="The review page's forms", status_code=200)
    async def submit(self, request: Request[Any, Any, State], token: str) -> Response[str]:
        ctx = request.app.state.ctx
        raw = await request.body()
        if len(raw) > MAX_FORM_BYTES:
            return _html(review_html.problem_page("The form is too large."), 413)
        fields = parse_qs(raw.decode("utf-8", errors="replace"), keep_blank_values=True)
        body = {
            k: v[0] for k, v in fields.items() if k in ("action", "edited_text", "refusal_reason")
        }
        try:
            _, decided = await decide(ctx.pool, ctx.event_log, token, body)
        except DecisionRefused as refused:
            if refused.status == 422:
                return _html(review_html.problem_page(refused.detail), 422)
            found = await find(ctx.pool, ctx.event_log, token)
            if found is None:
                return _html(review_html.ended_page("unknown"), 404)
            standing = "decided" if refused.status == 409 else found.standing
            return _html(review_html.ended_page(standing, refused.detail), refused.status)
        return _html(review_html.outcome_page(decided.decision))


def _ended(found: Found) -> str:
    row = found.row
    detail = f"Decision: {row['decision']}." if row["decision"] else ""
    if found.standing == "expired":
        detail = f"It expired on {row['expires_at']:%Y-%m-%d %H:%M} UTC."
    return review_html.ended_page(found.standing, detail)


__all__ = ["HitlController", "ReviewPageController"]
