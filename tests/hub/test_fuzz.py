"""The OpenAPI schema fuzzed with schemathesis against the ASGI app, every check on, with a fixed seed.

`--checks all` in code: every check schemathesis registers (no 5xx, statuses,
content types, headers and bodies as documented, bad data refused, Allow on
405 …), except that a schema-valid body must be accepted on the two writes:
the hub refuses some for what a schema cannot say (see docs/hub.md). Requests carry a valid token, so writes reach validation and storage
rather than stopping at the 401; then every page of what the fuzzer stored is
rendered. A small run here (EXAMPLES per operation); the load script runs a
large one (benchmarks/hub/load.py --fuzz).
"""

from __future__ import annotations

import os

import pytest
import schemathesis
import schemathesis.specs.openapi.checks
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, seed, settings
from schemathesis.checks import CHECKS

from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token
from tests.hub.conftest import GENEROUS

SEED = 20260
EXAMPLES = int(os.environ.get("RIGBOOK_FUZZ_EXAMPLES", "15"))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def fuzzed_hub(request, tmp_path_factory):
    """The app on a fresh database of each backend, with a token for the writes."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'hub.sqlite3'}"
    else:
        url = request.getfixturevalue("pg_server").new_database()
    app = create_app(url, limits=GENEROUS, max_body=256 * 1024)
    yield app, create_token(app.state.sessions, "fuzz")
    app.state.engine.dispose()


def fuzz(app, token: str, examples: int) -> None:
    """Every operation, ``examples`` cases each, every check; raises on the first failure."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 6
    for operation in operations:
        checks = CHECKS.get_all()
        if operation.method.upper() == "POST":
            # A schema-valid recipe or result can still be refused (422) for what the schema cannot say: a
            # measured point in a recipe, a control character, a result that does not fit its recipe.
            checks = [c for c in checks if c.__name__ != "positive_data_acceptance"]

        @seed(SEED)
        @given(case=operation.as_strategy())
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case) -> None:
            # Called at once below, inside this loop turn: `checks` is this turn's list.
            case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=checks)  # noqa: B023

        conforms()


def test_every_operation_conforms_to_its_schema(fuzzed_hub):
    app, token = fuzzed_hub
    fuzz(app, token, EXAMPLES)
    # Whatever the fuzzer stored must render: every recipe page, the index and the leaderboard.
    client = TestClient(app)
    slugs = [
        r["slug"] for r in client.get("/api/v1/recipes", params={"limit": 500}).json()["items"]
    ]
    for path in ["/", "/leaderboard", "/?q=%00%ff", *(f"/r/{s}" for s in slugs)]:
        assert client.get(path).status_code == 200, path
