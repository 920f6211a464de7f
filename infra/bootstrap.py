#!/usr/bin/env python3
"""Set up `.venv` (Python 3.11+) with Heym and its dev tools, then hand over to Taskfile.yml.

Usage: python3 infra/bootstrap.py <task> [args]   e.g. `up`, `test`, `bench`.
Installs only when pyproject.toml changed since the last install, so re-runs start at once.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".heym-install-stamp"


def _digest() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_venv() -> None:
    if not (BIN / "python").exists():
        print(f"bootstrap: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=False).create(VENV)
    if STAMP.exists() and STAMP.read_text() == _digest() and (BIN / "task").exists():
        return
    print("bootstrap: installing Heym and its dev tools into .venv (about a minute)", flush=True)
    subprocess.run(
        [str(BIN / "python"), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        check=True,
    )
    subprocess.run(
        [str(BIN / "python"), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[dev]"],
        check=True,
    )
    STAMP.write_text(_digest())


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script runs before the venv exists
        print("Heym needs Python 3.11 or newer", file=sys.stderr)
        return 2
    ensure_venv()
    task = str(BIN / "task")
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    os.execve(task, [task, "--dir", str(ROOT), *(argv or ["--list"])], env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
