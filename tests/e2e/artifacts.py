"""Files tests leave for people to look at (screenshots): where they go, and a list the
session prints at its end (`conftest.pytest_terminal_summary`), so their paths show in any
run, not only with `-s`."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAVED: list[Path] = []


def directory() -> Path:
    """`HEYM_TEST_ARTIFACTS`, else `.heym/test-artifacts/` in the checkout."""
    path = Path(os.environ.get("HEYM_TEST_ARTIFACTS") or ROOT / ".heym" / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def saved(path: Path, what: str) -> None:
    print(f"{what}: {path}")
    SAVED.append(path)
