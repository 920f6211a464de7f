"""Scale-out tests. `FAILOVER` marks the kill -9 failover tests (a nats-server and the stream
leader killed on the three-node cluster, a scheduler replica killed under load). They run in
the default suite; `task test:failover` runs only them (to repeat them under load, say)."""

import pytest

FAILOVER = (pytest.mark.failover,)
