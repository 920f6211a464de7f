"""Small, explicit edits of Postgres connection URLs (socket URLs included)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def with_database(url: str, database: str) -> str:
    """The same server URL pointing at another database."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))
