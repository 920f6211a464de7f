"""The first code of every contained process: limits, identity, then the skill, tool or server.

Run as a file (`python -I -S launcher.py KEY=VALUE ... -- TARGET [ARGS]`), never imported by
the service. It imports nothing but `os`, `sys` and `resource` (every import here is paid by
every tool call). Settings:

- `rlimit.<name>=<n>`: `resource.RLIMIT_<NAME>` (soft = hard, never raised);
- `uid=<n>` / `gid=<n>`: drop to this identity (only when started as root), no extra groups;
- `pdeathsig=1`: SIGKILL this process when its parent dies (set after the identity change,
  which would clear it), for runs outside bubblewrap;
- `site=<dir>`: put a directory on `sys.path` (no `.pth` processing); `venv_site=1`: add the
  site-packages of `$VIRTUAL_ENV` with its `.pth` files (the environment `uv run` made);
- `mode=run` (run the file TARGET as `__main__`) or `mode=exec` (replace this process with
  TARGET ARGS, an MCP server).
"""

import os
import resource
import sys


def _die_with_parent(expected_parent):
    import ctypes  # only outside bubblewrap: ctypes costs a few milliseconds to import

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != expected_parent:  # the parent died before the request took effect
        os._exit(137)


def _limit(name, value):
    which = getattr(resource, "RLIMIT_" + name.upper(), None)
    if which is None:
        return
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY and value > hard:
        value = hard
    resource.setrlimit(which, (value, value))


def _drop_identity(uid, gid):
    if os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        os._exit(126)


def _venv_site():
    venv = os.environ.get("VIRTUAL_ENV")
    if not venv:
        return
    import site

    lib = os.path.join(venv, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    site.addsitedir(os.path.join(lib, "site-packages"))


def main():
    args = sys.argv[1:]
    split = args.index("--")
    settings, target = args[:split], args[split + 1 :]
    parent = os.getppid()
    config = {}
    sites = []
    for item in settings:
        key, _, value = item.partition("=")
        if key.startswith("rlimit."):
            _limit(key[7:], int(value))
        elif key == "site":
            sites.append(value)
        else:
            config[key] = value
    if "uid" in config:
        _drop_identity(int(config["uid"]), int(config["gid"]))
    if config.get("pdeathsig") == "1":
        _die_with_parent(parent)
    os.umask(0o077)
    if config.get("mode") == "exec":
        os.execvp(target[0], target)
    entry = os.path.abspath(target[0])
    sys.argv = [entry, *target[1:]]
    sys.path[:] = [os.path.dirname(entry), *(p for p in sys.path if p), *sites]
    if config.get("venv_site") == "1":
        _venv_site()
    # Tell the sandbox the interpreter is up: after this line, a failure is the code's own.
    os.write(2, b"\x00heym-launcher-ready\x00\n")
    with open(entry, "rb") as f:
        code = compile(f.read(), entry, "exec")
    namespace = {"__name__": "__main__", "__file__": entry, "__builtins__": __builtins__}
    del f
    exec(code, namespace)


if __name__ == "__main__":
    main()
