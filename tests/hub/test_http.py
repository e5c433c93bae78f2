"""HTTP details: nesting depth, HEAD, Allow, security headers, documented statuses, tokens and limits."""

from __future__ import annotations

import pytest

from rigbook.errors import RigbookError
from rigbook.hub.auth import revoke_token
from rigbook.hub.client import HubClient
from rigbook.hub.rates import Limits, Rate
from tests.hub.helpers import SMALL_SLUG, live_hub, make_result

GET_PATHS = (
    "/",
    "/?q=h200",
    f"/r/{SMALL_SLUG}",
    "/leaderboard",
    "/static/hub.css",
    "/openapi.json",
    "/api/v1/recipes",
    f"/api/v1/recipes/{SMALL_SLUG}.json",
    f"/api/v1/recipes/{SMALL_SLUG}/revisions",
    "/api/v1/leaderboard.json",
)


def nested(depth: int) -> str:
    """JSON text of objects nested ``depth`` deep (built as text: json.dumps itself recurses)."""
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [256, 5000])
def test_deep_nesting_is_422_not_500(hub, depth):
    body = (
        '{"slug": "x", "title": "x", "config": {"launch": ["true"]}, "rigbook": '
        + nested(depth)
        + "}"
    )
    for path, code in (
        ("/api/v1/recipes", "E_RECIPE_INVALID"),
        (f"/api/v1/recipes/{SMALL_SLUG}/results", "E_RESULT_REFUSED"),
    ):
        answer = hub.client.post(
            path, content=body, headers=hub.auth | {"content-type": "application/json"}
        )
        assert answer.status_code == 422, answer.text
        assert (
            answer.json()["error"]["code"] == code and "nests" in answer.json()["error"]["message"]
        )


def test_head_answers_every_get_route_with_its_headers_and_no_body(hub):
    for path in GET_PATHS:
        get, head = hub.client.get(path), hub.client.head(path)
        assert head.status_code == get.status_code == 200, path
        assert (
            head.content == b"" and head.headers["content-type"] == get.headers["content-type"]
        ), path
        assert head.headers.get("content-length") == get.headers.get("content-length"), path


def test_allow_names_every_method_of_the_path(hub):
    for method, path, allowed in (
        ("PUT", "/api/v1/recipes", "GET, HEAD, POST"),
        ("DELETE", f"/api/v1/recipes/{SMALL_SLUG}.json", "GET, HEAD"),
        ("GET", f"/api/v1/recipes/{SMALL_SLUG}/results", "POST"),
        ("POST", "/leaderboard", "GET, HEAD"),
    ):
        answer = hub.client.request(method, path, headers=hub.auth)
        assert answer.status_code == 405 and answer.headers["allow"] == allowed, (
            method,
            path,
            answer.headers,
        )
        assert answer.json()["error"]["code"] == "E_METHOD"


def test_security_headers_on_pages_api_and_errors(hub):
    for path in (*GET_PATHS, "/r/nope", "/api/v1/recipes/nope.json"):
        headers = hub.client.get(path).headers
        assert "default-src 'none'" in headers["content-security-policy"], path
        assert "frame-ancestors 'none'" in headers["content-security-policy"], path
        assert (
            headers["x-content-type-options"] == "nosniff"
            and headers["referrer-policy"] == "no-referrer"
        ), path
        assert headers["x-frame-options"] == "DENY", path


def test_every_status_the_api_answers_is_in_the_openapi(hub, seed_record):
    spec = hub.client.get("/openapi.json").json()["paths"]
    made = [
        ("get", "/api/v1/recipes/{slug}.json", hub.client.get("/api/v1/recipes/nope.json")),
        ("get", "/api/v1/recipes", hub.client.get("/api/v1/recipes", params={"limit": 0})),
        ("post", "/api/v1/recipes", hub.client.post("/api/v1/recipes", json=seed_record)),
        (
            "post",
            "/api/v1/recipes",
            hub.client.post("/api/v1/recipes", content=b"{", headers=hub.auth),
        ),
        (
            "post",
            "/api/v1/recipes",
            hub.client.post("/api/v1/recipes", json=seed_record, headers=hub.auth),
        ),
        (
            "post",
            "/api/v1/recipes",
            hub.client.post("/api/v1/recipes", json=seed_record, headers=hub.auth),
        ),
        (
            "post",
            "/api/v1/recipes/{slug}/results",
            hub.client.post(
                f"/api/v1/recipes/{SMALL_SLUG}/results",
                json=make_result(decode=(-1.0,)).model_dump(mode="json"),
                headers=hub.auth,
            ),
        ),
    ]
    board = hub.client.get("/api/v1/leaderboard.json")
    made.append(
        (
            "get",
            "/api/v1/leaderboard.json",
            hub.client.get(
                "/api/v1/leaderboard.json", headers={"if-none-match": board.headers["etag"]}
            ),
        )
    )
    for method, path, answer in made:
        assert str(answer.status_code) in spec[path][method]["responses"], (
            method,
            path,
            answer.status_code,
        )
    assert {a.status_code for _m, _p, a in made} >= {200, 201, 304, 401, 404, 422}


def test_a_revoked_token_is_refused_at_once(hub, seed_record):
    assert (
        hub.client.post(
            "/api/v1/recipes", json=seed_record | {"title": "a"}, headers=hub.auth
        ).status_code
        == 201
    )
    revoked = revoke_token(hub.app.state.sessions, "test-1")
    assert revoked.revoked_at is not None
    answer = hub.client.post("/api/v1/recipes", json=seed_record | {"title": "b"}, headers=hub.auth)
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "E_AUTH"
    assert hub.token not in answer.text


def test_failed_authentications_are_limited_per_address_across_apps(make_hub, seed_record):
    limits = Limits(writes_per_token=Rate(limit=100), auth_failures_per_address=Rate(limit=3))
    a, b = make_hub(limits=limits), make_hub(limits=limits, load_builtin=False)
    bad = {"Authorization": "Bearer rbk_guess"}
    codes = [
        (a if i % 2 else b)
        .client.post("/api/v1/recipes", json=seed_record, headers=bad)
        .status_code
        for i in range(5)
    ]
    assert codes == [401, 401, 401, 429, 429]
    # The address is held off even with a good token until the window ends.
    held = a.client.post("/api/v1/recipes", json=seed_record, headers=a.auth)
    assert held.status_code == 429 and 1 <= int(held.headers["retry-after"]) <= 60


def test_reads_are_limited_per_address_when_asked(make_hub):
    hub = make_hub(limits=Limits(reads_per_address=Rate(limit=3)))
    codes = [hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]


def test_a_token_with_a_line_break_is_refused_without_printing_it(hub):
    with live_hub(hub.app) as url:
        token = hub.token + "\n  shown once: keep it"
        with pytest.raises(RigbookError) as caught:
            HubClient(url, token).publish_result(SMALL_SLUG, make_result().model_dump(mode="json"))
    assert (
        caught.value.code == "E_AUTH"
        and hub.token not in str(caught.value)
        and hub.token not in repr(caught.value.__dict__)
    )
