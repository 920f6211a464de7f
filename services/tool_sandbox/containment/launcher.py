"""The first code of every contained process: limits, identity, then the skill, tool or server.

Run as a file (`python -I -S launcher.py CONFIG ...`), never imported by the service: it uses
the standard library only and starts in a few milliseconds. CONFIG is a JSON object:

- `limits`: `{name: value}` for `resource.RLIMIT_<NAME>` (soft = hard, never raised);
- `uid`/`gid`: drop to this identity (only when started as root), with no supplementary groups;
- `pdeathsig`: ask Linux to SIGKILL this process when its parent dies (set after the identity
  change, which would clear it), for runs outside bubblewrap;
- `site`: directories to put on `sys.path` (no `.pth` processing), `venv_site`: also add the
  site-packages of `$VIRTUAL_ENV` with its `.pth` files (the environment `uv run` made);
- `mode`: `run` (run the file `argv[0]` as `__main__`), `tool` (the Python-tool runner
  `argv[0]`), or `exec` (replace this process with `argv`, an MCP server).
"""

import json
import os
import resource
import sys


def _die_with_parent(expected_parent: int) -> None:
    import ctypes  # only outside bubblewrap: ctypes costs a few milliseconds to import

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != expected_parent:  # the parent died before the request took effect
        os._exit(137)


def _limit(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        which = getattr(resource, "RLIMIT_" + name.upper(), None)
        if which is None:
            continue
        _soft, hard = resource.getrlimit(which)
        value = int(value)
        if hard != resource.RLIM_INFINITY and value > hard:
            value = hard
        resource.setrlimit(which, (value, value))


def _drop_identity(uid: int, gid: int) -> None:
    if os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        os._exit(126)


def _venv_site() -> None:
    venv = os.environ.get("VIRTUAL_ENV")
    if not venv:
        return
    import site

    lib = os.path.join(venv, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    site.addsitedir(os.path.join(lib, "site-packages"))


def main() -> None:
    config = json.loads(sys.argv[1])
    argv = sys.argv[2:]
    parent = os.getppid()
    _limit(config.get("limits") or {})
    if "uid" in config:
        _drop_identity(int(config["uid"]), int(config["gid"]))
    if config.get("pdeathsig"):
        _die_with_parent(parent)
    os.umask(0o077)
    sys.path[:] = [p for p in sys.path if p]
    for path in config.get("site") or []:
        sys.path.append(path)
    if config.get("venv_site"):
        _venv_site()
    mode = config.get("mode")
    if mode == "exec":
        os.execvp(argv[0], argv)
    entry = os.path.abspath(argv[0])
    sys.argv = [entry, *argv[1:]]
    sys.path.insert(0, os.path.dirname(entry))
    # Tell the sandbox the interpreter is up: after this line, a failure is the code's own.
    os.write(2, b"\x00heym-launcher-ready\x00\n")
    import runpy

    runpy.run_path(entry, run_name="__main__")


if __name__ == "__main__":
    main()
