"""Workspaces: a fresh private directory per call, owned by the call's identity, then deleted."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

OUTPUT_DIR = "_output_files"


def _chown_tree(root: Path, ident: tuple[int, int]) -> None:
    uid, gid = ident
    os.chown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


@contextlib.contextmanager
def workspace(
    root: Path, files: list[tuple[str, bytes]], ident: tuple[int, int] | None
) -> Iterator[Path]:
    """A new directory under `root` with `files` at their (already checked) relative paths
    and an empty `_output_files/`; removed with everything in it when the block ends."""
    root.mkdir(parents=True, exist_ok=True, mode=0o711)
    path = root / secrets.token_hex(12)
    path.mkdir(mode=0o700)
    try:
        for rel, data in files:
            target = path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (path / OUTPUT_DIR).mkdir(exist_ok=True)
        (path / ".tmp").mkdir(exist_ok=True)
        if ident is not None:
            _chown_tree(path, ident)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
