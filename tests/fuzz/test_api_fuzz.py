"""The gateway fuzzed from its own OpenAPI document: no generated request gets a 5xx.

Every operation in `/schema/openapi.json` gets generated requests, valid ones (path and
query values, headers, bodies from the documented schemas) and invalid ones (values outside
the schemas), each sent once without an API key and once with an administrator's. Bounded
for CI; `task fuzz` runs many more.

Schemathesis drives hypothesis directly here (its pytest plugin's lazy fixtures do not run
on pytest 9).
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.e2e.system import System
from tests.fuzz.conftest import examples

pytestmark = pytest.mark.e2e

MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


@pytest.fixture(scope="session")
def gateway_schema(system: System) -> Any:
    return schemathesis.openapi.from_url(f"{system.base_url}/schema/openapi.json")


@pytest.fixture(scope="session")
async def admin_key(system: System) -> str:
    _, key = await system.new_user(is_admin=True)
    return key


def _operations(schema: Any) -> list[Any]:
    return [result.ok() for result in schema.get_all_operations()]


def test_the_document_describes_every_route_and_body(gateway_schema: Any) -> None:
    labels = {op.label for op in _operations(gateway_schema)}
    assert "POST /api/workflows" in labels
    assert "DELETE /api/users/{user_id}/api-keys/{key_id}" in labels
    create = gateway_schema["/api/workflows"]["POST"]
    assert create.body  # documented, so the fuzzer sends real-looking workflows


def test_no_request_gets_a_server_error(gateway_schema: Any, admin_key: str) -> None:
    failures: list[str] = []
    for operation in _operations(gateway_schema):
        for mode in MODES:

            @settings(
                max_examples=examples(8, 300),
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case: Any) -> None:
                for headers in ({}, {"X-MCP-Key": admin_key}):
                    response = case.call(headers=headers, timeout=30)
                    assert response.status_code < 500, (
                        f"{case.method} {case.formatted_path} -> {response.status_code}: "
                        f"{response.text[:300]}\n{case.as_curl_command(headers=headers)}"
                    )

            try:
                check()
            except Unsatisfiable:
                continue  # nothing to make invalid (e.g. no parameters, no body)
            except Exception as exc:
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    assert not failures, "\n\n".join(failures)


def test_following_links_never_gets_a_server_error(gateway_schema: Any, admin_key: str) -> None:
    """Stateful: create a workflow, credential or user, then act on it through the links."""
    base = gateway_schema.as_state_machine()
    assert base.bundles, "the document has no links to follow"

    class Session(base):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": {"X-MCP-Key": admin_key}, "timeout": 30}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path} -> {response.status_code}: "
                f"{response.text[:300]}"
            )

    Session.run(
        settings=settings(
            max_examples=examples(15, 500),
            stateful_step_count=6,
            # The server keeps state between examples, so a replayed sequence may take other
            # links: generate only (a failure is still reported with its steps).
            phases=[Phase.generate],
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )
