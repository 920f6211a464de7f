"""One scripted model server per test module; each test installs its own script."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from libs.testing.model_server import ModelServer, Script


@pytest.fixture(scope="module")
def shared_server() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@pytest.fixture
def srv(shared_server: ModelServer) -> ModelServer:
    shared_server.script = Script()
    shared_server.clear_ledger()
    return shared_server
