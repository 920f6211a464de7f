"""The review page's HTML: server-rendered, no script at all, one column with large controls
(usable on a phone), the agent's draft rendered from Markdown and then sanitised.

Agent text is hostile: Markdown is rendered with raw HTML off (markdown-it-py), and the result
is cleaned by nh3 (Ammonia) to a small allow-list of tags, with only http(s) and mailto links.
The page's Content-Security-Policy allows no script, no external image, no frame, and forms
posting only to this origin; its one inline style sheet is allowed by its hash.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from typing import Any

import nh3
from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "del",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}

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
_CSS_HASH = base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
CSP = (
    "default-src 'none'; "
    f"style-src 'sha256-{_CSS_HASH}'; "
    "img-src 'self'; "
    "form-action 'self'; "
    "base-uri 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # The token is in the page's URL: links followed from the draft must not carry it away.
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


def render_markdown(text: str) -> str:
    """Agent Markdown as safe HTML: no script, no handler, no javascript: URL survives."""
    return nh3.clean(
        _MD.render(text),
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>"
    )


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
