"""`python -m services.gateway`: serve the HTTP API until SIGINT/SIGTERM."""

from __future__ import annotations

from libs.service import run_service
from services.gateway.app import SERVICE, serve

if __name__ == "__main__":
    run_service(SERVICE, serve)
