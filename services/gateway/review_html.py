"""The review page's HTML: server-rendered, no script at all, one column with large controls
(usable on a phone), the agent's draft rendered from Markdown and then sanitised.

Agent text is hostile: Markdown is rendered with raw HTML off (markdown-it-py), and the result
is cleaned by nh3 (Ammonia) to a small allow-list of tags, with only http(s) and mailto links.
The page's Content-Security-Policy allows no script, no external image, no frame, and forms
posting only to this origin; its one inline style sheet is allowed by its hash. The shell,
the headers and the Markdown cleaning are shared with the inspector (`web/`).
"""

from __future__ import annotations

from html import escape
from typing import Any

from services.gateway.web.document import document
from services.gateway.web.markdown import render_markdown
from services.gateway.web.security import content_security_policy, page_headers, style_hash

CSS = """
*{box-sizing:border-box}body{margin:0;font:17px/1.5 system-ui,sans-serif;color:#1c1c1e;
background:#f4f4f6}main{max-width:44rem;margin:0 auto;padding:1rem}h1{font-size:1.35rem;
margin:.5rem 0}.meta{color:#555;font-size:.95rem}.summary{font-weight:600}.draft{background:#fff;
border:1px solid #ddd;border-radius:10px;padding:.25rem 1rem;overflow-wrap:anywhere}
.draft pre{overflow-x:auto}form{margin:1rem 0}button{width:100%;min-height:3rem;font-size:1.05rem;
border:0;border-radius:10px;cursor:pointer}.accept{background:#1a7f37;color:#fff}.edit{
background:#0b57d0;color:#fff}.refuse{background:#b3261e;color:#fff}textarea{width:100%;
min-height:12rem;font:inherit;padding:.5rem;border-radius:8px;border:1px solid #bbb}
details{margin:1rem 0;background:#fff;border-radius:10px;padding:.5rem 1rem}
summary{font-weight:600;min-height:2.5rem;line-height:2.5rem;cursor:pointer}
.outcome{background:#fff;border-radius:10px;padding:1rem}
"""
CSP = content_security_policy(styles=style_hash(CSS))
HEADERS = page_headers(CSP)


def _page(title: str, body: str) -> str:
    return document(title, body, head=f"<style>{CSS}</style>")


def review_form(row: Any) -> str:
    draft = str(row["draft_text"])
    workflow = escape(str(row["workflow_name"] or "workflow"))
    agent = escape(str(row["agent_label"] or "agent"))
    body = (
        "<h1>Review requested</h1>"
        f"<p class=meta>Workflow <b>{workflow}</b> · agent <b>{agent}</b></p>"
        f"<p class=summary id=summary>{escape(str(row['summary']))}</p>"
        f"<section class=draft id=draft>{render_markdown(draft)}</section>"
        "<form method=post><input type=hidden name=action value=accept>"
        "<button class=accept id=accept type=submit>Accept</button></form>"
        "<details id=edit-panel><summary>Edit</summary><form method=post>"
        "<input type=hidden name=action value=edit>"
        f"<textarea name=edited_text id=edited_text maxlength=100000>{escape(draft)}</textarea>"
        "<button class=edit id=submit-edit type=submit>Submit edited version</button>"
        "</form></details>"
        "<details id=refuse-panel><summary>Refuse</summary><form method=post>"
        "<input type=hidden name=action value=refuse>"
        "<textarea name=refusal_reason id=refusal_reason maxlength=10000 "
        'placeholder="Reason (optional)"></textarea>'
        "<button class=refuse id=submit-refuse type=submit>Refuse</button></form></details>"
    )
    return _page("Review requested", body)


_OUTCOMES = {
    "accepted": "You accepted the draft. The workflow goes on with it.",
    "edited": "You sent an edited version. The workflow goes on with your text.",
    "refused": "You refused. The agent stops without taking the action.",
}


def outcome_page(decision: str) -> str:
    text = _OUTCOMES.get(decision, "Your decision was recorded.")
    body = (
        f'<h1 id=outcome data-decision="{escape(decision)}">Decision recorded</h1>'
        f"<p class=outcome>{escape(text)}</p>"
    )
    return _page("Decision recorded", body)


_ENDED = {
    "unknown": ("Link not valid", "This review link is not valid. Check that it is complete."),
    "expired": ("Review expired", "This review link has expired; the paused step has failed."),
    "decided": ("Already decided", "This review was already decided. A link works only once."),
    "cancelled": ("Run cancelled", "The run this review belongs to was cancelled."),
}


def ended_page(standing: str, detail: str = "") -> str:
    title, text = _ENDED.get(standing, ("Review closed", "This review is closed."))
    extra = f"<p class=meta>{escape(detail)}</p>" if detail else ""
    body = f'<h1 id=ended data-standing="{escape(standing)}">{escape(title)}</h1>'
    return _page(title, body + f"<p class=outcome>{escape(text)}</p>{extra}")


def problem_page(detail: str) -> str:
    body = f"<h1 id=problem>Not sent</h1><p class=outcome>{escape(detail)}</p>"
    return _page("Not sent", body + '<p><a href="">Back to the review</a></p>')
