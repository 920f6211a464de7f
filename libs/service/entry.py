"""The process entry point shared by every service: settings, logging, run until a signal."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import uvloop

from libs.config import Settings, SettingsError, load_settings
from libs.secrets import install_log_masking


def configure_logging(service: str, level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format=f"%(asctime)s %(levelname)s {service} %(name)s: %(message)s",
        stream=sys.stderr,
    )
    install_log_masking()  # credentials the process decrypts never reach its logs


def run_service(service: str, main: Callable[[Settings], Coroutine[Any, Any, None]]) -> None:
    """Read settings once, configure logging, and run `main(settings)` until it returns."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"{service}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(service, settings.log_level)
    try:
        # uvloop: the services spend their time in socket I/O (NATS, Postgres, HTTP), where
        # it roughly halves the event loop's cost per message.
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main(settings))
    except KeyboardInterrupt:
        pass
    except SettingsError as exc:
        logging.getLogger(service).error("%s", exc)
        raise SystemExit(2) from None
