"""Process mode: `python -m libs.testing.model_server [--port N] [--script path.json]`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import msgspec

from libs.testing.model_server._demo import demo_script
from libs.testing.model_server._engine import Engine
from libs.testing.model_server._script import Script
from libs.testing.model_server._server import listening_socket, make_server

READY_PREFIX = "model-server listening on "


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m libs.testing.model_server",
        description="A scripted OpenAI-compatible chat-completions server for tests and demos.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--script", help="JSON script file; the built-in demo script if omitted")
    parser.add_argument("--latency", type=float, help="default delay in seconds before answers")
    args = parser.parse_args(argv)

    script = Script.load(args.script) if args.script else demo_script()
    if args.latency is not None:
        script = msgspec.structs.replace(script, latency=args.latency)
    sock = listening_socket(args.host, args.port)
    port = sock.getsockname()[1]
    # Supervisors (tests, the demo) wait for this line to learn the port.
    print(f"{READY_PREFIX}http://{args.host}:{port}/v1", flush=True)
    try:
        make_server(Engine(script), quiet=False).run(sockets=[sock])
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
