"""Signed results: a key per publisher, registered per token; tampered, wrongly signed and replayed
results refused; a revoked key's points marked, not deleted. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select

from rigbook.bench.result import BenchResult
from rigbook.hub.auth import create_token
from rigbook.hub.models import ResultRow
from rigbook.hub.signing import (
    KEY_HEADER,
    SIGNATURE_HEADER,
    create_key,
    load_key,
    public_key_of,
    sign,
)
from tests.hub.helpers import SMALL_SLUG, make_result

TWIN_SLUG = "smollm2-135m-on-one-h200-again"


def body_of(result: BenchResult) -> dict:
    return json.loads(result.model_dump_json())


def register(hub, private: Ed25519PrivateKey, token: str | None = None):
    headers = {"Authorization": f"Bearer {token or hub.token}"}
    return hub.client.post(
        "/api/v1/keys", json={"public_key": public_key_of(private).public_key}, headers=headers
    )


def publish_signed(hub, slug: str, body: dict, headers: dict, token: str | None = None):
    auth = {"Authorization": f"Bearer {token or hub.token}"}
    return hub.client.post(f"/api/v1/recipes/{slug}/results", json=body, headers=auth | headers)


def error_code(answer) -> str:
    return answer.json()["error"]["code"]


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def test_the_key_file_is_the_owners_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBOOK_HOME", str(tmp_path))
    made = create_key()
    mode = stat.S_IMODE((tmp_path / "keys" / "signing.key").stat().st_mode)
    assert mode == 0o600 and stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    assert public_key_of(load_key()).key_id == made.key_id
    with pytest.raises(Exception) as again:
        create_key()
    assert getattr(again.value, "code", None) == "E_CONFIRM"
    assert create_key(force=True).key_id != made.key_id


def test_a_signed_result_publishes_and_shows_its_signer(hub, key):
    first = register(hub, key)
    assert first.status_code == 201 and first.json()["token"] == "test-1"
    assert register(hub, key).status_code == 200
    body = body_of(make_result())
    answer = publish_signed(hub, SMALL_SLUG, body, sign(key, SMALL_SLUG, body))
    assert answer.status_code == 201, answer.text
    kid = public_key_of(key).key_id
    record = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()
    assert {p.get("signed_by") for p in record["perf_points"] if p["claimed_by"] == "measured"} == {
        kid
    }
    assert f"signed {kid}" in hub.client.get(f"/r/{SMALL_SLUG}").text
    board = hub.client.get("/api/v1/leaderboard.json", params={"evidence": "measured"}).json()
    assert {(e["signed_by"], e["signer_revoked_at"]) for e in board["items"]} == {(kid, None)}
    assert f"signed {kid}" in hub.client.get("/leaderboard").text
    shown = hub.client.get(f"/api/v1/keys/{kid}").json()
    assert shown["public_key"] == public_key_of(key).public_key and shown["token"] == "test-1"
    with hub.app.state.sessions() as session:
        assert session.scalars(select(ResultRow.key_id)).all() == [kid]


def test_a_result_changed_after_signing_is_refused(hub, key):
    register(hub, key)
    body = body_of(make_result())
    headers = sign(key, SMALL_SLUG, body)
    changed = body_of(make_result(decode=(400.0, 900.2539)))  # hashed again by whoever changed it
    answer = publish_signed(hub, SMALL_SLUG, changed, headers)
    assert answer.status_code == 422 and error_code(answer) == "E_SIGNATURE", answer.text
    assert "changed after it was signed" in answer.json()["error"]["message"]


def test_a_key_not_registered_to_the_token_is_refused(hub, key):
    other_token = create_token(hub.app.state.sessions, "someone-else")
    register(hub, key, other_token)
    body = body_of(make_result())
    answer = publish_signed(hub, SMALL_SLUG, body, sign(key, SMALL_SLUG, body))
    assert answer.status_code == 422 and error_code(answer) == "E_SIGNATURE"
    unknown = Ed25519PrivateKey.generate()
    answer = publish_signed(hub, SMALL_SLUG, body, sign(unknown, SMALL_SLUG, body))
    assert answer.status_code == 422 and error_code(answer) == "E_SIGNATURE"
    taken = register(hub, key)
    assert taken.status_code == 422 and "another token" in taken.json()["error"]["message"]


def test_a_result_signed_for_another_recipe_is_refused(hub, key):
    record = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()
    twin = {k: v for k, v in record.items() if k not in ("revision", "links", "speeds")}
    twin |= {"slug": TWIN_SLUG, "perf_points": []}
    assert hub.client.post("/api/v1/recipes", json=twin, headers=hub.auth).status_code == 201
    register(hub, key)
    body = body_of(make_result(None))
    answer = publish_signed(hub, TWIN_SLUG, body, sign(key, SMALL_SLUG, body))
    assert answer.status_code == 422 and error_code(answer) == "E_SIGNATURE"
    assert "signed for another recipe" in answer.json()["error"]["message"]


def test_half_a_signature_is_refused(hub):
    body = body_of(make_result())
    answer = publish_signed(hub, SMALL_SLUG, body, {KEY_HEADER: "ed25519:00"})
    assert answer.status_code == 422 and error_code(answer) == "E_SIGNATURE"
    assert SIGNATURE_HEADER in answer.json()["error"]["message"]


def test_a_revoked_key_signs_nothing_new_and_its_points_are_marked_not_deleted(hub, key):
    register(hub, key)
    body = body_of(make_result())
    assert publish_signed(hub, SMALL_SLUG, body, sign(key, SMALL_SLUG, body)).status_code == 201
    kid = public_key_of(key).key_id
    done = hub.client.post(f"/api/v1/keys/{kid}/revoke", headers=hub.auth)
    assert done.status_code == 200, done.text
    assert done.json()["points_marked"] == 2 and done.json()["revoked_at"]
    record = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()
    signed = [p for p in record["perf_points"] if p.get("signed_by") == kid]
    assert len(signed) == 2 and all(p["signer_revoked_at"] for p in signed)
    assert "key revoked" in hub.client.get(f"/r/{SMALL_SLUG}").text
    board = hub.client.get("/api/v1/leaderboard.json", params={"evidence": "measured"}).json()
    assert {e["signer_revoked_at"] for e in board["items"]} == {done.json()["revoked_at"]}
    again = hub.client.post(f"/api/v1/keys/{kid}/revoke", headers=hub.auth)
    assert again.json()["points_marked"] == 0
    later = body_of(make_result(decode=(300.0, 800.0)))
    answer = publish_signed(hub, SMALL_SLUG, later, sign(key, SMALL_SLUG, later))
    assert answer.status_code == 422 and error_code(answer) == "E_KEY_REVOKED"
    keys = hub.client.get("/api/v1/keys", headers=hub.auth).json()
    assert [(k["key_id"], bool(k["revoked_at"])) for k in keys] == [(kid, True)]


def test_hub_owned_signature_fields_cannot_be_written_in_a_recipe(hub, seed_record):
    point = seed_record["perf_points"][0] | {"signed_by": "ed25519:00", "signer_revoked_at": "x"}
    answer = hub.client.post(
        "/api/v1/recipes", json=seed_record | {"perf_points": [point]}, headers=hub.auth
    )
    assert answer.status_code == 422
    assert {d.split(":")[0] for d in answer.json()["error"]["details"]} == {
        "perf_points.0.signed_by",
        "perf_points.0.signer_revoked_at",
    }


def test_the_cli_creates_registers_signs_and_rotates(tmp_path, monkeypatch):
    from rigbook.bench.result import save_result
    from rigbook.hub.app import create_app
    from tests.hub.helpers import live_hub
    from tests.hub.test_cli import rigbook

    monkeypatch.setenv("RIGBOOK_HOME", str(tmp_path / "home"))
    app = create_app(f"sqlite:///{tmp_path / 'hub.sqlite3'}")
    token = create_token(app.state.sessions, "cli")
    result = save_result(make_result(), tmp_path / "result.json")
    try:
        with live_hub(app) as url:
            made = rigbook("key", "create", "--json")
            assert made.exit_code == 0, made.stderr
            kid = json.loads(made.stdout)["key_id"]
            assert rigbook("key", "create").exit_code == 2
            hub = ("--hub", url, "--token", token)
            assert rigbook("key", "register", *hub).exit_code == 0
            published = rigbook("publish", str(result), *hub)
            assert published.exit_code == 0, published.stderr
            assert f"signed by {kid}" in published.stdout
            rotated = rigbook("key", "rotate", *hub, "--json")
            assert rotated.exit_code == 0, rotated.stderr
            assert json.loads(rotated.stdout)["revoked"]["points_marked"] == 2
            listed = json.loads(rigbook("key", "list", *hub, "--json").stdout)
            assert [bool(k["revoked_at"]) for k in listed] == [True, False]
            assert "key revoked" in __import__("httpx").get(f"{url}/r/{SMALL_SLUG}").text
    finally:
        app.state.engine.dispose()
