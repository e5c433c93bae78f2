"""The hub client's errors: the status decides for 401/403, 429 and 5xx, the body's code otherwise,
and the class a caller catches is always the one the code names."""

from __future__ import annotations

import pytest

from rigbook.errors import (
    AuthError,
    EndpointError,
    ErrorDocument,
    HubServerError,
    InputError,
    RateLimited,
    RigbookError,
)
from rigbook.hub.client import HubClient
from tests.launch.stub_http import json_body, serve


def _answer(status: int, body: bytes, headers: dict[str, str] | None = None):
    def handle(_request):
        return status, {"Content-Type": "application/json", **(headers or {})}, body

    return handle


def _hub_error(code: str, message: str) -> bytes:
    return ErrorDocument(error=RigbookError(code, message).body()).model_dump_json().encode()


@pytest.mark.parametrize(
    "status, body, cls, code",
    [
        (401, _hub_error("E_AUTH", "the API token is not known"), AuthError, "E_AUTH"),
        (403, b"forbidden by the proxy", AuthError, "E_AUTH"),
        (429, _hub_error("E_RATE_LIMIT", "60 writes in 60 s"), RateLimited, "E_RATE_LIMIT"),
        (503, _hub_error("E_DB", "no database"), HubServerError, "E_HUB_SERVER"),
        (502, b"<html>Bad Gateway</html>", HubServerError, "E_HUB_SERVER"),
        (404, _hub_error("E_RECIPE_NOT_FOUND", "no recipe 'x'"), InputError, "E_RECIPE_NOT_FOUND"),
        (404, b"<html>Not Found</html>", EndpointError, "E_HTTP"),
    ],
)
def test_each_failed_answer_is_the_class_its_code_names(status, body, cls, code):
    with serve(_answer(status, body)) as url, pytest.raises(RigbookError) as caught:
        HubClient(url, token="rbk_x").get_recipe("x")
    assert type(caught.value) is cls and caught.value.code == code


def test_a_server_failure_keeps_the_hubs_own_code_and_a_rate_limit_says_how_long():
    with (
        serve(_answer(503, _hub_error("E_DB", "the database is down"))) as url,
        pytest.raises(HubServerError) as caught,
    ):
        HubClient(url).get_recipe("x")
    assert "E_DB: the database is down" in caught.value.message
    with (
        serve(_answer(429, _hub_error("E_RATE_LIMIT", "slow down"), {"Retry-After": "7"})) as url,
        pytest.raises(RateLimited) as limited,
    ):
        HubClient(url, token="rbk_x").publish_recipe({})
    assert "Retry-After: 7 s" in limited.value.message


def test_json_that_is_not_a_rigbook_error_is_not_a_hub():
    with (
        serve(_answer(400, json_body({"detail": "nope"}))) as url,
        pytest.raises(EndpointError) as caught,
    ):
        HubClient(url).get_recipe("x")
    assert caught.value.code == "E_HTTP" and "not a rigbook hub" in caught.value.message
