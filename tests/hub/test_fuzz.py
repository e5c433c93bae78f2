"""The OpenAPI schema fuzzed with schemathesis against the ASGI app: no answer is a 5xx.

Requests carry a valid token, so writes reach validation and storage rather
than stopping at the 401; then every page of what the fuzzer stored is rendered.
"""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def fuzzed_hub(request, tmp_path_factory):
    """The app on a fresh database of each backend, with a token for the writes."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'hub.sqlite3'}"
    else:
        url = request.getfixturevalue("pg_server").new_database()
    app = create_app(url, rate=(10**6, 60.0), max_body=256 * 1024)
    yield app, create_token(app.state.sessions, "fuzz")
    app.state.engine.dispose()


def test_no_operation_answers_5xx(fuzzed_hub):
    app, token = fuzzed_hub
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 6

    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=30, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
        def no_server_error(case) -> None:
            response = case.call(headers={"Authorization": f"Bearer {token}"})
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:500]}")

        no_server_error()

    # Whatever the fuzzer stored must render: every recipe page, the index and the leaderboard.
    client = TestClient(app)
    slugs = [r["slug"] for r in client.get("/api/v1/recipes", params={"limit": 500}).json()["items"]]
    for path in ["/", "/leaderboard", "/?q=%00%ff", *(f"/r/{s}" for s in slugs)]:
        assert client.get(path).status_code == 200, path
