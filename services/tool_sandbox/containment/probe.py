"""`confirm`: run one tiny contained process at start, and step down until one works.

`plan()` decides from what is installed; this checks it really works here (a container may
forbid namespaces, an interpreter may be unreadable to an unprivileged user): bubblewrap →
rlimits only, own identity → the service's identity. `HEYM_SANDBOX_BUBBLEWRAP=require` never
steps down from bubblewrap.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from services.tool_sandbox.containment.policy import (
    LAUNCHER,
    WORKSPACE_IN_SANDBOX,
    Containment,
    Limits,
)

log = logging.getLogger(__name__)

PROBE = b"import json, decimal\nprint(json.dumps({'ok': True}))\n"


def works(containment: Containment, work_root: Path) -> bool:
    work_root.mkdir(parents=True, exist_ok=True, mode=0o711)
    ws = Path(tempfile.mkdtemp(prefix="probe-", dir=work_root))
    try:
        (ws / "main.py").write_bytes(PROBE)
        ident = containment.identity(0)
        if ident is not None:
            os.chown(ws, *ident)
            os.chown(ws / "main.py", *ident)
        inner = WORKSPACE_IN_SANDBOX if containment.bwrap else str(ws)
        settings = containment.launcher_args(mode="run", limits=Limits(), slot=0, site=False)
        argv = containment.wrap(
            [containment.python, "-I", "-S", LAUNCHER, *settings, f"{inner}/main.py"],
            workspace=str(ws),
            env={"PATH": "/usr/bin:/bin", "HOME": inner, "LANG": "C.UTF-8"},
            network=False,
            cwd=inner,
        )
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                timeout=30,
                env={"PATH": "/usr/bin:/bin"},
                cwd=None if containment.bwrap else ws,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("sandbox probe (%s) failed: %s", containment.label, exc)
            return False
        if done.returncode != 0 or b'"ok": true' not in done.stdout:
            log.warning(
                "sandbox probe (%s) failed (exit %s): %s",
                containment.label,
                done.returncode,
                done.stderr.decode(errors="replace")[-500:],
            )
            return False
        return True
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def confirm(containment: Containment, work_root: Path, *, fallback: Containment) -> Containment:
    """The first of `containment`, `fallback` (rlimits only), each with and then without an
    identity of its own, that runs a process here."""
    candidates = [containment]
    if containment.bwrap is not None:
        candidates.append(fallback)
    tried: list[Containment] = []
    for candidate in candidates:
        tried.append(candidate)
        if works(candidate, work_root):
            return candidate
        if candidate.uid_base is not None:
            shared = dataclasses.replace(
                candidate,
                uid_base=None,
                notes=(*candidate.notes, "processes keep the service's identity"),
            )
            if works(shared, work_root):
                return shared
    raise RuntimeError(
        "the tool sandbox cannot start a contained process here "
        f"(tried: {', '.join(c.label for c in tried)}); see the log"
    )
