"""Child-process plumbing shared by the launchers: die with the parent, free ports, TCP waits."""

from __future__ import annotations

import ctypes
import signal
import socket
import sys
import time
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` asking Linux to signal the child when its parent dies (even on kill -9)."""
    if not sys.platform.startswith("linux"):
        return None

    def _set() -> None:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)

    return _set


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def wait_port(host: str, port: int, timeout: float, *, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(host, port):
            return
        if not alive():
            raise RuntimeError(f"process exited before listening on {host}:{port}")
        time.sleep(0.01)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")
