"""`rigbook hub …`, `rigbook publish` and `rigbook recipes --hub` against a real uvicorn hub on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from rigbook.cli.app import app as cli
from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token
from rigbook.recipe.catalog import list_recipes
from tests.conftest import free_port
from tests.hub.helpers import SMALL_SLUG, live_hub, make_result, point_conditions, served_workers
from tests.in_process import rigbook_here


def rigbook(*args: str):
    done = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"})
    assert "Traceback" not in done.stderr
    return done


@pytest.fixture
def served(tmp_path):
    """A hub on uvicorn with a token: ``(url, token)``."""
    app = create_app(f"sqlite:///{tmp_path / 'hub.sqlite3'}")
    token = create_token(app.state.sessions, "cli")
    with live_hub(app) as url:
        yield url, token
    app.state.engine.dispose()


def test_serve_on_a_fresh_home_serves_the_builtin_catalog(tmp_path):
    port = free_port()
    env = os.environ | {"RIGBOOK_HOME": str(tmp_path / "fresh-home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigbook", "hub", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read().decode()
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/api/v1/recipes", timeout=2).json()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "hub serve did not answer in 60 s"
                time.sleep(0.2)
        assert page["total"] == len(list_recipes())
        assert (tmp_path / "fresh-home" / "hub.sqlite3").is_file()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_init_is_idempotent_and_tokens_are_stored_hashed(tmp_path):
    db = f"sqlite:///{tmp_path / 'hub.sqlite3'}"
    first = rigbook("hub", "init", "--db", db, "--json")
    assert first.exit_code == 0 and len(json.loads(first.stdout)["loaded"]) == len(list_recipes())
    assert json.loads(rigbook("hub", "init", "--db", db, "--json").stdout)["loaded"] == []
    made = rigbook("hub", "token", "create", "alice", "--db", db, "--json")
    token = json.loads(made.stdout)["token"]
    assert (
        token.startswith("rbk_") and token.encode() not in (tmp_path / "hub.sqlite3").read_bytes()
    )
    again = rigbook("hub", "token", "create", "alice", "--db", db)
    assert again.exit_code == 2 and "error[E_INPUT]" in again.stderr
    bad = rigbook("hub", "init", "--db", "nosuchdialect://x")
    assert bad.exit_code == 2 and "error[E_DB]" in bad.stderr


def test_recipes_commands_read_the_hub(served):
    url, _ = served
    listed = rigbook("recipes", "list", "--hub", url, "--json")
    assert listed.exit_code == 0, listed.stderr
    assert sorted(r["slug"] for r in json.loads(listed.stdout)) == sorted(
        r.slug for r in list_recipes()
    )
    found = json.loads(rigbook("recipes", "search", "h200", "--hub", url, "--json").stdout)
    assert [r["slug"] for r in found] == [SMALL_SLUG]
    shown = json.loads(rigbook("recipes", "show", SMALL_SLUG, "--hub", url, "--json").stdout)
    assert shown["links"]["self"] == f"/api/v1/recipes/{SMALL_SLUG}.json"


def test_publish_recipe_and_result(served, tmp_path, seed_record):
    url, token = served
    recipe_file = tmp_path / "recipe.json"
    recipe_file.write_text(json.dumps(seed_record | {"slug": "my-rig", "title": "my rig"}))
    done = rigbook("publish", str(recipe_file), "--hub", url, "--token", token, "--json")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout) | {"url": ""} == {
        "kind": "recipe",
        "slug": "my-rig",
        "revision": 1,
        "points_added": None,
        "verified": None,
        "duplicate": False,
        "signed_by": None,
        "url": "",
    }

    from rigbook.bench.result import save_result

    result_file = save_result(make_result(), tmp_path / "result.json")
    done = rigbook("publish", str(result_file), "--hub", url, "--token", token)
    assert done.exit_code == 0, done.stderr
    assert "published 2 measured point(s)" in done.stdout and f"/r/{SMALL_SLUG}" in done.stdout
    page = httpx.get(f"{url}/r/{SMALL_SLUG}").text
    assert "900.3" in page
    assert "900.3" in httpx.get(f"{url}/leaderboard").text

    orphan = save_result(make_result(None, decode=(11.0,)), tmp_path / "orphan.json")
    refused = rigbook("publish", str(orphan), "--hub", url, "--token", token)
    assert (
        refused.exit_code == 2
        and "error[E_INPUT]" in refused.stderr
        and "--recipe" in refused.stderr
    )
    done = rigbook(
        "publish", str(orphan), "--hub", url, "--token", token, "--recipe", SMALL_SLUG, "--json"
    )
    assert done.exit_code == 0 and json.loads(done.stdout)["points_added"] == 1


def test_publish_errors_are_clear(served, tmp_path, seed_record):
    url, token = served
    from rigbook.bench.result import save_result

    result_file = save_result(make_result(), tmp_path / "result.json")
    no_token = rigbook("publish", str(result_file), "--hub", url)
    assert (
        no_token.exit_code == 2
        and "error[E_AUTH]" in no_token.stderr
        and "token create" in no_token.stderr
    )
    wrong = rigbook("publish", str(result_file), "--hub", url, "--token", "rbk_wrong", "--json")
    assert wrong.exit_code == 2 and json.loads(wrong.stdout)["error"]["code"] == "E_AUTH"

    dead = rigbook(
        "publish", str(result_file), "--hub", f"http://127.0.0.1:{free_port()}", "--token", token
    )
    assert dead.exit_code == 2 and "error[E_CONNECT]" in dead.stderr
    dead_list = rigbook("recipes", "list", "--hub", f"http://127.0.0.1:{free_port()}")
    assert dead_list.exit_code == 2 and "error[E_CONNECT]" in dead_list.stderr

    # A server that is not a hub (the bench's synthetic server answers 404 to unknown paths).
    from tests.bench.helpers import start_synthetic

    proc, other = start_synthetic()
    try:
        not_hub = rigbook("publish", str(result_file), "--hub", other, "--token", token, "--json")
        assert not_hub.exit_code == 2 and json.loads(not_hub.stdout)["error"]["code"] == "E_HTTP"
        assert "not a rigbook hub" in json.loads(not_hub.stdout)["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(10)

    incomplete = save_result(
        make_result(conditions=point_conditions(quant=None, reply_tokens=None)),
        tmp_path / "inc.json",
    )
    refused = rigbook("publish", str(incomplete), "--hub", url, "--token", token)
    assert refused.exit_code == 2 and "error[E_RESULT_REFUSED]" in refused.stderr
    assert "perf_points.0.conditions.quant: missing" in refused.stderr
    assert "perf_points.1.conditions.reply_tokens: missing" in refused.stderr

    tampered = json.loads(result_file.read_text())
    tampered["perf_points"][0]["decode_tok_s"] = 1e6
    (tmp_path / "tampered.json").write_text(json.dumps(tampered))
    local = rigbook("publish", str(tmp_path / "tampered.json"), "--hub", url, "--token", token)
    assert local.exit_code == 2 and "error[E_RESULT_INVALID]" in local.stderr

    bad_recipe = tmp_path / "bad.json"
    bad_recipe.write_text(json.dumps({"slug": "x", "config": {"launch": 1}}))
    invalid = rigbook("publish", str(bad_recipe), "--hub", url, "--token", token)
    assert (
        invalid.exit_code == 2 and "config.launch" in invalid.stderr and "title" in invalid.stderr
    )


def test_publish_too_large(tmp_path, seed_record):
    app = create_app(f"sqlite:///{tmp_path / 'hub.sqlite3'}", max_body=2048)
    token = create_token(app.state.sessions, "cli")
    big = tmp_path / "big.json"
    big.write_text(json.dumps(seed_record))
    with live_hub(app) as url:
        done = rigbook("publish", str(big), "--hub", url, "--token", token)
    app.state.engine.dispose()
    assert done.exit_code == 2 and "error[E_TOO_LARGE]" in done.stderr


def test_client_takes_the_api_url_and_names_a_missing_recipe(served, tmp_path):
    url, token = served
    from rigbook.errors import RigbookError
    from rigbook.hub.client import HubClient

    for given in (url, url + "/", url + "/api/v1", url + "/api/v1/"):
        assert HubClient(given).get_recipe(SMALL_SLUG).slug == SMALL_SLUG
    with pytest.raises(RigbookError) as missing:
        HubClient(url).get_recipe("nope")
    assert (
        missing.value.code == "E_RECIPE_NOT_FOUND" and "no recipe 'nope'" in missing.value.message
    )
    listed = rigbook("recipes", "list", "--hub", url + "/api/v1", "--json")
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)) == len(list_recipes())
    from rigbook.bench.result import save_result

    done = rigbook(
        "publish",
        str(save_result(make_result(), tmp_path / "r.json")),
        "--hub",
        url + "/api/v1/",
        "--token",
        token,
        "--json",
    )
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["url"] == f"{url}/r/{SMALL_SLUG}"


def test_recipes_show_names_a_recipe_the_hub_lacks(served):
    url, _ = served
    missing = rigbook("recipes", "show", "nope", "--hub", url)
    assert missing.exit_code == 2 and "error[E_RECIPE_NOT_FOUND]" in missing.stderr
    shown = rigbook("recipes", "show", SMALL_SLUG, "--hub", url + "/api/v1", "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["slug"] == SMALL_SLUG


def test_a_taken_port_is_e_port():
    import socket

    from rigbook.errors import RigbookError
    from rigbook.hub.serve import check_port

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        for host in ("127.0.0.1", "0.0.0.0"):
            with pytest.raises(RigbookError) as taken:
                check_port(host, port)
            assert (
                taken.value.code == "E_PORT"
                and taken.value.exit_code == 2
                and f"port {port}" in taken.value.message
            )
    check_port("127.0.0.1", free_port())


def test_serve_on_a_taken_port_fails_with_e_port(tmp_path):
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = rigbook_here(
            "hub", "serve", "--port", str(port), env={"RIGBOOK_HOME": str(tmp_path)}
        )
    assert (
        done.returncode == 2
        and "error[E_PORT]" in done.stderr
        and "rigbook hub on" not in done.stdout
    )


def test_token_create_prints_the_token_alone_and_list_and_revoke_work(tmp_path):
    db = f"sqlite:///{tmp_path / 'hub.sqlite3'}"
    made = rigbook_here("hub", "token", "create", "ci", "--db", db)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert (
        made.stdout == token + "\n" and token.startswith("rbk_") and " " not in token
    )  # TOK=$(…) gets it alone
    assert "shown once" in made.stderr
    listed = json.loads(rigbook("hub", "token", "list", "--db", db, "--json").stdout)
    assert [(t["name"], t["revoked_at"]) for t in listed] == [("ci", None)]
    assert token not in rigbook("hub", "token", "list", "--db", db).stdout
    revoked = json.loads(rigbook("hub", "token", "revoke", "ci", "--db", db, "--json").stdout)
    assert revoked["name"] == "ci" and revoked["revoked_at"]
    missing = rigbook("hub", "token", "revoke", "nobody", "--db", db)
    assert missing.exit_code == 2 and "error[E_INPUT]" in missing.stderr


def test_serve_with_workers_shares_limits_and_revocation_through_the_database(
    tmp_path, seed_record
):
    port, db = free_port(), f"sqlite:///{tmp_path / 'hub.sqlite3'}"
    token = json.loads(rigbook("hub", "token", "create", "w", "--db", db, "--json").stdout)["token"]
    url = f"http://127.0.0.1:{port}"
    with served_workers(db, port, "--auth-limit", "3"):
        good = {"Authorization": f"Bearer {token}"}
        # A new connection per request: the two workers take turns, and still count together.
        assert (
            httpx.post(
                f"{url}/api/v1/recipes", json=seed_record | {"slug": "w1"}, headers=good
            ).status_code
            == 201
        )
        assert rigbook("hub", "token", "revoke", "w", "--db", db).exit_code == 0
        codes = [
            httpx.post(
                f"{url}/api/v1/recipes", json=seed_record | {"slug": "w2"}, headers=good
            ).status_code
            for _ in range(5)
        ]
        assert codes == [401, 401, 401, 429, 429]
        head = httpx.head(f"{url}/api/v1/leaderboard.json")
        assert head.status_code == 200 and head.headers["etag"] and head.content == b""


def _older_result(tmp_path) -> Path:
    """A result as an older rigbook wrote it: a field this version fills with a default
    (``conditions.profile.overrides``) absent, the hash over what is left, its own layout."""
    from rigbook.bench.result import hash_as_written, save_result

    raw = json.loads(save_result(make_result(), tmp_path / "new.json").read_text("utf-8"))
    raw["conditions"]["profile"].pop("overrides")
    raw["content_hash"] = hash_as_written(raw)
    older = tmp_path / "older.json"
    older.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    return older


def test_a_result_file_is_checked_and_published_as_written(served, tmp_path, seed_record):
    from rigbook.bench.result import load_result, verify_hash

    url, token = served
    older = _older_result(tmp_path)
    # Re-built as this version's model it carries the default again, so a hash taken on the
    # model would refuse the file; the file's own JSON is what its hash covers.
    assert not verify_hash(load_result(older))
    done = rigbook("publish", str(older), "--hub", url, "--token", token, "--json")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["points_added"] == 2
    # The hub checks the JSON as posted: the same file with one number changed is refused.
    raw = json.loads(older.read_text("utf-8"))
    raw["perf_points"][0]["decode_tok_s"] += 1
    refused = httpx.post(
        f"{url}/api/v1/recipes/{SMALL_SLUG}/results",
        headers={"authorization": f"Bearer {token}"},
        json=raw,
    )
    assert refused.status_code == 422 and "content_hash" in refused.text
