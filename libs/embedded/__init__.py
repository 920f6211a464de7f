"""Launchers for the embedded dev stack: nats-server and Postgres, both from wheels."""

from libs.embedded.nats_server import EmbeddedNats, find_nats_server
from libs.embedded.postgres import EmbeddedPostgres

__all__ = ["EmbeddedNats", "EmbeddedPostgres", "find_nats_server"]
