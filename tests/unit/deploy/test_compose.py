"""docker-compose.yml stays in step with services/ (Docker does not run here, so it is read)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from libs.config import NEEDS_DATABASE, NEEDS_SECRET_KEY

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def service_packages() -> set[str]:
    return {p.parent.name for p in (ROOT / "services").glob("*/__main__.py")}


NATS_NODES = {"nats-1", "nats-2", "nats-3"}  # one JetStream cluster


def test_every_service_is_deployed_with_its_environment() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    deployed = compose["services"]
    assert service_packages() == {"gateway", "scheduler", "agent_runtime", "tool_sandbox", "review"}
    for name in service_packages():
        svc = deployed.get(name)
        assert svc is not None, f"{name} is missing from docker-compose.yml"
        assert svc["build"]["args"]["SERVICE"] == name
        env = svc["environment"]
        # every node of the cluster, so a service reconnects to any of them
        urls = env["HEYM_NATS_URL"].split(",")
        assert {u.removeprefix("nats://").split(":")[0] for u in urls} == NATS_NODES
        assert env["HEYM_STREAM_REPLICAS"] == "3"
        # least privilege: exactly the services that need the database or the key get them
        assert ("HEYM_DATABASE_URL" in env) == (name in NEEDS_DATABASE), name
        assert ("HEYM_SECRET_KEY" in env) == (name in NEEDS_SECRET_KEY), name
        if name in NEEDS_DATABASE:
            assert env["HEYM_DATABASE_URL"].startswith("postgresql://")
            assert set(svc["depends_on"]) == {*NATS_NODES, "postgres"}
        else:
            assert set(svc["depends_on"]) == NATS_NODES
        assert "HEYM_ADMIN_API_KEY" not in env
    assert deployed["gateway"]["environment"]["HEYM_HTTP_HOST"] == "0.0.0.0"
    # the one-shot admin bootstrap
    admin = deployed["admin"]
    assert admin["command"] == ["heym", "admin", "create"]
    assert admin["profiles"] == ["setup"]


def test_nats_is_durable_and_recent() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in NATS_NODES:
        nats = compose["services"][name]
        version = nats["image"].split(":")[1].split("-")[0]
        assert tuple(int(x) for x in version.split(".")[:2]) >= (2, 12)
        assert "./infra/nats-cluster.conf:/etc/nats/nats.conf:ro" in nats["volumes"]
    conf = (ROOT / "infra" / "nats-cluster.conf").read_text()
    assert "sync_interval: always" in conf
    assert "jetstream" in conf
    assert all(f"nats-route://{n}:6222" in conf for n in NATS_NODES)


def test_dockerfile_builds_one_service_by_argument() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG SERVICE" in dockerfile
    assert "python -m services.${HEYM_SERVICE}" in dockerfile
