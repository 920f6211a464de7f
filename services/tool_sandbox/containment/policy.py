"""`Containment`: how this replica contains the processes it runs, decided once at start.

Every contained process gets: an environment built from nothing (no `HEYM_*`, no database
URL, no keys: only what the call needs), resource limits (address space, CPU time, process
count, file size, no core files), a new session so the whole tree can be killed, and, when the
service runs as root, an unprivileged identity of its own (so root-only files such as the
secret key stay unreadable and the process limit counts only that call's processes).

Where Debian's `bubblewrap` works it also gets namespaces: the host root read-only, a private
`/tmp` holding the workspace, the service's data directory and root's home hidden, no network
unless allowed, a new PID namespace, and death with the sandbox. Without it the status table
says "rlimits only".
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

LAUNCHER = str(Path(__file__).with_name("launcher.py"))
WORKSPACE_IN_SANDBOX = "/tmp/workspace"
TMPFS_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Resource limits of one contained process (soft = hard)."""

    memory_bytes: int = 512 * 1024 * 1024
    cpu_s: int = 30
    processes: int = 64
    file_bytes: int = 16 * 1024 * 1024
    open_files: int = 256
    # V8 (Node MCP servers) reserves a 4 GB cage and cannot start under an address-space
    # limit; servers get a data-segment limit instead, which counts only writable memory.
    memory_kind: str = "as"

    def rlimits(self) -> dict[str, int]:
        return {
            self.memory_kind: self.memory_bytes,
            "cpu": max(1, self.cpu_s),
            "nproc": self.processes,
            "fsize": self.file_bytes,
            "nofile": self.open_files,
            "core": 0,
        }


@dataclass(frozen=True)
class Containment:
    mode: str  # "bubblewrap" | "rlimits only"
    bwrap: str | None
    python: str  # the sandbox's interpreter
    base_python: str  # the interpreter `uv run` builds environments on
    site: tuple[str, ...]  # the sandbox's site-packages, offered to skills in plain mode
    uid_base: int | None  # None: keep the service's identity
    hidden: tuple[str, ...] = ()  # directories replaced by an empty tmpfs inside bubblewrap
    visible: tuple[str, ...] = ()  # directories bound back (read-only) under hidden ones
    writable: tuple[str, ...] = ()  # directories bound read-write (uv's cache)
    notes: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        return f"sandbox: {self.mode}"

    def identity(self, slot: int) -> tuple[int, int] | None:
        if self.uid_base is None:
            return None
        uid = self.uid_base + slot
        return uid, uid

    def launcher_args(
        self, *, mode: str, limits: Limits, slot: int, site: bool, venv_site: bool = False
    ) -> list[str]:
        """The launcher's settings (see launcher.py), ending with `--`."""
        args = [f"mode={mode}"]
        args += [f"rlimit.{name}={value}" for name, value in limits.rlimits().items()]
        ident = self.identity(slot)
        if ident is not None:
            args += [f"uid={ident[0]}", f"gid={ident[1]}"]
        if self.bwrap is None:
            args.append("pdeathsig=1")
        if site:
            args += [f"site={path}" for path in self.site]
        if venv_site:
            args.append("venv_site=1")
        return [*args, "--"]

    def wrap(
        self,
        argv: list[str],
        *,
        workspace: str | None,
        env: dict[str, str] | None,
        network: bool,
        cwd: str | None = None,
    ) -> list[str]:
        """The command line that runs `argv` inside bubblewrap (unchanged without it)."""
        if self.bwrap is None:
            return argv
        cmd = [
            self.bwrap,
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        if not network:
            cmd.append("--unshare-net")
        # /tmp first: binds of paths under the host's /tmp must land on the private one
        cmd += ["--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
        for hidden in self.hidden:
            cmd += ["--perms", "0755", "--tmpfs", hidden]
        for path in self.visible:
            # bubblewrap creates missing parents private (0700); the identity could not pass
            for parent in _parents_below(path, self.hidden):
                cmd += ["--perms", "0755", "--dir", parent]
            cmd += ["--ro-bind", path, path]
        for path in self.writable:
            cmd += ["--bind", path, path]
        if workspace is not None:
            cmd += ["--bind", workspace, WORKSPACE_IN_SANDBOX]
        if env is not None:  # else the process environment passes through (it may hold keys)
            cmd += ["--clearenv"]
            for key, value in env.items():
                cmd += ["--setenv", key, value]
        if cwd is not None:
            cmd += ["--chdir", cwd]
        return [*cmd, "--", *argv]


def _parents_below(path: str, hidden: tuple[str, ...]) -> list[str]:
    top = next((h for h in hidden if path.startswith(h + "/")), None)
    if top is None:
        return []
    parents: list[str] = []
    current = top
    for part in path[len(top) + 1 :].split("/")[:-1]:
        current = f"{current}/{part}"
        parents.append(current)
    return parents


def _traversable_by_others(path: Path) -> bool:
    """Every directory from `/` down to `path` can be entered by any user."""
    current = Path("/")
    for part in path.resolve().parts[1:]:
        try:
            mode = current.stat().st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
        current = current / part
    try:
        return bool(current.stat().st_mode & stat.S_IXOTH)
    except OSError:
        return False


def _highest_closed(path: Path) -> Path | None:
    current = Path("/")
    for part in path.resolve().parts[1:]:
        current = current / part
        try:
            if not current.stat().st_mode & stat.S_IXOTH:
                return current
        except OSError:
            return None
    return None


def needed_paths(extra: list[Path]) -> list[Path]:
    """What a contained process must read: interpreters, their libraries, uv, the launcher."""
    paths = {
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sysconfig.get_paths()["stdlib"]),
        Path(LAUNCHER).parent,
        *extra,
    }
    return sorted(paths)


def plan(
    *,
    bubblewrap: str,
    data_dir: Path,
    uid_base: int,
    uv_cache: Path,
    uv_bin: str | None,
) -> Containment:
    """Decide the containment (without probing; `probe.py` confirms it works)."""
    bwrap = shutil.which("bwrap") if bubblewrap != "off" else None
    notes: list[str] = []
    if bubblewrap == "require" and bwrap is None:
        raise RuntimeError("HEYM_SANDBOX_BUBBLEWRAP=require but bwrap is not installed")
    extra = [uv_cache]
    if uv_bin:
        extra.append(Path(uv_bin).parent)
    needed = needed_paths(extra)
    root = os.geteuid() == 0
    site = tuple(p for p in {sysconfig.get_paths()["purelib"]} if Path(p).is_dir())
    base_python = str(
        Path(getattr(sys, "_base_executable", sys.executable) or sys.executable).resolve()
    )
    if bwrap is not None:
        hidden = {str(data_dir.resolve())}
        if Path("/root").is_dir():
            hidden.add("/root")
        for path in needed:
            closed = _highest_closed(path)
            if closed is not None:
                hidden.add(str(closed))
        visible = [
            str(p)
            for p in needed
            if any(str(p).startswith(h + "/") or str(p) == h for h in hidden)
            and p != uv_cache
            and p.exists()
        ]
        return Containment(
            mode="bubblewrap",
            bwrap=bwrap,
            python=sys.executable,
            base_python=base_python,
            site=site,
            uid_base=uid_base if root else None,
            hidden=tuple(sorted(hidden)),
            visible=tuple(sorted(set(visible))),
            writable=(str(uv_cache),),
            notes=tuple(notes),
        )
    uid: int | None = None
    if root:
        unreadable = [p for p in needed if not _traversable_by_others(p)]
        if unreadable:
            notes.append(
                "processes keep the service's identity: "
                f"{unreadable[0]} cannot be read by an unprivileged user"
            )
        else:
            uid = uid_base
    return Containment(
        mode="rlimits only",
        bwrap=None,
        python=sys.executable,
        base_python=base_python,
        site=site,
        uid_base=uid,
        notes=tuple(notes),
    )
