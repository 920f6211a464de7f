"""Agent text (hostile) as safe HTML: Markdown rendered with raw HTML off, then cleaned.

markdown-it-py renders with `html: False`, so raw tags in the text come out escaped; nh3
(Ammonia) then keeps a small allow-list of tags, no attribute that runs code, and only
http(s) and mailto links.
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "del",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}


def render_markdown(text: str) -> str:
    """Agent Markdown as safe HTML: no script, no handler, no javascript: URL survives."""
    return nh3.clean(
        _MD.render(text),
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
