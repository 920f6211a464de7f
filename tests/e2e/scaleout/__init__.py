"""Scale-out tests. `FAILOVER` marks the kill -9 failover tests: they run with
`task test:failover` (HEYM_TEST_FAILOVER=1), not in the default suite, until they pass
reliably (a fresh-clone run lost 2 of 160 runs after a nats-server kill, and gave one wrong
review output after a scheduler kill; a lone replica once held 7 of 8 partitions after 10 s
in the join test of `tests/integration/service/test_partitioned.py`)."""

import os

import pytest

FAILOVER = (
    pytest.mark.failover,
    pytest.mark.skipif(
        os.environ.get("HEYM_TEST_FAILOVER") != "1",
        reason="kill -9 failover: run by `task test:failover` (not reliable enough for CI yet)",
    ),
)
