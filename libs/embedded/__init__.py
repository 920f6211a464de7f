"""Launchers for the embedded dev stack: nats-server and Postgres, both from wheels."""

from libs.embedded.nats_cluster import EmbeddedNatsCluster, wait_jetstream
from libs.embedded.nats_server import EmbeddedNats, find_nats_server
from libs.embedded.postgres import EmbeddedPostgres

__all__ = [
    "EmbeddedNats",
    "EmbeddedNatsCluster",
    "EmbeddedPostgres",
    "find_nats_server",
    "wait_jetstream",
]
