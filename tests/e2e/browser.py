"""A real browser for end-to-end tests: Debian's chromium driven by Playwright's Python
package (`executable_path`: no browser download). Tests skip, saying why, without one."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}


def chromium() -> str | None:
    for candidate in (os.environ.get("HEYM_TEST_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.asynccontextmanager
async def browser_context(**options: Any) -> AsyncIterator[Any]:
    """A fresh browser context (its own cookies); `options` as Playwright's `new_context`."""
    executable = chromium()
    if executable is None:
        pytest.skip("no chromium browser on this machine (.ci/run installs Debian's chromium)")
    playwright = pytest.importorskip("playwright.async_api")
    async with playwright.async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield await browser.new_context(**options)
        finally:
            await browser.close()


@contextlib.asynccontextmanager
async def phone_page() -> AsyncIterator[Any]:
    async with browser_context(viewport=PHONE, is_mobile=True, has_touch=True) as context:
        yield await context.new_page()
