"""Signing in to the inspector over plain HTTP (as a browser would, form and cookies)."""

from __future__ import annotations

import re

import httpx

from tests.e2e.system import System

_CSRF = re.compile(r'name=csrf value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


async def sign_in(c: httpx.AsyncClient, key: str) -> httpx.Response:
    """Sign `c` in with `key` through the sign-in form; returns the POST's answer."""
    form = await c.get("/ui/signin")
    assert form.status_code == 200, form.text
    return await c.post(
        "/ui/signin", data={"csrf": csrf_of(form.text), "api_key": key, "next": "/ui/history"}
    )


def browser_client(system: System, base_url: str | None = None) -> httpx.AsyncClient:
    """A client that keeps cookies and never sends an API key (only the session cookie)."""
    return httpx.AsyncClient(base_url=base_url or system.base_url, timeout=30)
