"""Content-Security-Policy and the other security headers of every HTML page.

Each page family states what it may load: the review page no script at all and one inline
style sheet allowed by its hash; the inspector scripts and styles from this origin only.
Nothing is ever allowed inline by `'unsafe-inline'`, and no page may be framed.
"""

from __future__ import annotations

import base64
import hashlib


def style_hash(css: str) -> str:
    """The CSP source allowing exactly this inline style sheet."""
    return f"'sha256-{base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()}'"


def content_security_policy(*, styles: str, scripts: str | None = None) -> str:
    """`default-src 'none'` plus the page's own sources; forms post only to this origin."""
    parts = ["default-src 'none'"]
    if scripts is not None:
        parts.append(f"script-src {scripts}")
        # Script here means live updates (Server-Sent Events) from this origin only.
        parts.append("connect-src 'self'")
    parts += [
        f"style-src {styles}",
        "img-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
    return "; ".join(parts)


def page_headers(csp: str, *, referrer: str = "no-referrer") -> dict[str, str]:
    """`referrer`: review links carry their token, so the review page sends none at all; the
    inspector sends it only to itself (`same-origin`), so links followed from agent text
    carry no run URL away while its own form posts keep their `Origin` (browsers send
    `Origin: null` under `no-referrer`)."""
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": referrer,
        "Cache-Control": "no-store",
        "X-Frame-Options": "DENY",
    }
