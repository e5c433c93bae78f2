"""Capacity results on the hub: published with their evidence, shown on the recipe page, ranked on
the users_at_slo board only against the same SLO (canonical text) and profile, kept off the tok/s
board and chart; the migration that fills that board on SQLite and PostgreSQL; `rigbook publish`
of a capacity file against a real hub on loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from rigbook.bench import MeasureRequest
from rigbook.capacity import CapacityResult, CapacitySpec, SearchSettings, parse_slo, run_capacity
from rigbook.capacity.result import hash_as_written, save_capacity
from rigbook.cli.app import app as cli
from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token
from rigbook.hub.chart import perf_chart
from rigbook.hub.leaderboard import slo_scope
from rigbook.recipe import EMBEDDED_SLUG
from rigbook.recipe.catalog import list_recipes
from rigbook.recipe.load import dump_recipe
from rigbook_testkit.synthetic_curves import Curve
from tests.capacity.helpers import MAX_TOKENS, serve
from tests.hub.conftest import GENEROUS
from tests.hub.helpers import live_hub

SLUG = "smollm2-135m-instruct-synthetic-capacity"
BOARD = "/api/v1/leaderboard.json"
SLO_A = "ttft_p90_ms<=5000,per_user_tok_s>=80"
SLO_A_AGAIN = "per_user_tok_s >= 80 tok/s, ttft_p90_ms <= 5s"  # the same SLO, written otherwise
SLO_B = "per_user_tok_s>=60,ttft_p90_ms<=5000"


def _recipe() -> dict:
    """The embedded recipe as one whose server answers to the synthetic server's model id."""
    recipe = next(r for r in list_recipes() if r.slug == EMBEDDED_SLUG)
    record = dump_recipe(recipe)
    record["slug"] = SLUG
    record["title"] = "SmolLM2 135M on the synthetic server"
    record["rigbook"]["serve"]["model_id"] = "synthetic"
    record.pop("revision", None)
    record["perf_points"] = []
    return record


def _measure(url: str, out: Path, slo: str) -> CapacityResult:
    spec = CapacitySpec(
        slo=parse_slo(slo),
        # The TTFT p90 term would ask 29 requests a probe; what is published does not need them.
        settings=SearchSettings(
            rounds=2, reruns=1, max_concurrency=4, min_requests=5, max_requests=5
        ),
        measure=MeasureRequest(
            url=url,
            model="synthetic",
            profile="quick",
            max_tokens=MAX_TOKENS,
            warmup=0,
            telemetry=False,
        ),
        out=out,
    )
    result = asyncio.run(run_capacity(spec, stop=asyncio.Event()))
    assert result is not None
    # Measured as the recipe above would be (a bench names its recipe's slug and quantisation).
    bench = result.bench.model_copy(
        update={
            "conditions": result.bench.conditions.model_copy(
                update={"recipe_slug": SLUG, "engine": "llama.cpp"}
            ),
            # a point states its run's engine (the hub checks it against the journal)
            "perf_points": [
                p.model_copy(
                    update={"conditions": p.conditions.model_copy(update={"engine": "llama.cpp"})}
                )
                for p in result.bench.perf_points
                if p.conditions is not None
            ],
        }
    )
    points = [
        p.model_copy(
            update={
                "conditions": p.conditions.model_copy(
                    update={"quant": "Q4_1", "engine": "llama.cpp"}
                )
            }
        )
        for p in result.perf_points
    ]
    result = result.model_copy(update={"bench": bench, "perf_points": points}).with_hash()
    save_capacity(result, out)
    return result


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    """Capacity files on a cliff at 2 users (200 tok/s each, 40 past it): two under SLO A (two
    runs), one under SLO B."""
    folder = tmp_path_factory.mktemp("capacity")
    proc, url = serve(Curve(shape="cliff", rate_tok_s=200, knee=2, drop=0.2))
    try:
        return {
            name: (_measure(url, folder / f"{name}.json", slo), folder / f"{name}.json")[1]
            for name, slo in (("a1", SLO_A), ("a2", SLO_A_AGAIN), ("b", SLO_B))
        }
    finally:
        proc.terminate()
        proc.wait(10)


def _post(hub, path: Path):
    return hub.client.post(
        f"/api/v1/recipes/{SLUG}/capacity",
        headers=hub.auth,
        json=json.loads(path.read_text()),
    )


@pytest.fixture
def stocked(hub):
    assert hub.client.post("/api/v1/recipes", headers=hub.auth, json=_recipe()).status_code == 201
    return hub


def test_a_capacity_result_is_published_verified_and_once(stocked, results):
    first = _post(stocked, results["a1"])
    assert first.status_code == 201, first.text
    assert first.json()["points_added"] == 1 and first.json()["verified"] == 1
    again = _post(stocked, results["a1"])
    assert again.status_code == 200 and again.json()["duplicate"]
    record = stocked.client.get(f"/api/v1/recipes/{SLUG}.json").json()
    (point,) = [p for p in record["perf_points"] if p.get("users_at_slo") is not None]
    assert point["users_at_slo"] == 2 and point["evidence"] == "consistent-with-journal"
    assert point["slo"] == "per_user_tok_s>=80,ttft_p90_ms<=5000,error_rate<=0"
    assert point["slo_binding"] == "per_user_tok_s" and point["slo_profile"] == "quick v2"


def test_a_capacity_whose_answer_its_requests_do_not_give_is_refused(stocked, results):
    body = json.loads(results["a1"].read_text())
    result = CapacityResult.model_validate(body)
    point = result.perf_points[0].model_copy(update={"users_at_slo": 3, "concurrency": 3})
    answer = result.answer.model_copy(update={"users": 3})
    forged = result.model_copy(update={"perf_points": [point], "answer": answer}).with_hash()
    refused = stocked.client.post(
        f"/api/v1/recipes/{SLUG}/capacity",
        headers=stocked.auth,
        json=forged.model_dump(mode="json"),
    )
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "E_RESULT_REFUSED"
    details = "\n".join(refused.json()["error"]["details"])
    assert "answer.users: claims 3; its probes give 2" in details
    assert "perf_points.0.users_at_slo: claims 3" in details
    # The load line is always there and in the hash (warnings may be empty, so clearing them
    # would change nothing).
    edited = dict(body, load=f"{body['load']} (edited)")
    bad_hash = stocked.client.post(
        f"/api/v1/recipes/{SLUG}/capacity", headers=stocked.auth, json=edited
    )
    assert bad_hash.status_code == 422 and "content_hash" in bad_hash.text


def test_the_board_ranks_users_only_under_the_same_canonical_slo_and_profile(stocked, results):
    for name in ("a1", "a2", "b"):
        assert _post(stocked, results[name]).status_code == 201
    items = stocked.client.get(f"{BOARD}?metric=users_at_slo").json()["items"]
    assert {e["recipe"] for e in items} == {SLUG}
    scopes = {e["scope"] for e in items}
    # A1 and A2 are one SLO written two ways: one scope, ranked 1 and 2; B is a scope of its own.
    assert scopes == {
        "per_user_tok_s>=80,ttft_p90_ms<=5000,error_rate<=0 · profile quick v2",
        "per_user_tok_s>=60,ttft_p90_ms<=5000,error_rate<=0 · profile quick v2",
    }
    by_scope = {s: sorted(e["rank"] for e in items if e["scope"] == s) for s in scopes}
    assert sorted(by_scope.values()) == [[1], [1, 2]]
    assert all(e["concurrency"] == 0 and e["value"] >= 1 for e in items)
    # The scope filter reads the SLO as a person writes it.
    scoped = stocked.client.get(
        BOARD,
        params={"metric": "users_at_slo", "scope": f"{SLO_A_AGAIN} · profile quick v2"},
    ).json()["items"]
    assert len(scoped) == 2
    # Capacity points are not tok/s numbers: not on the decode board, not on the speed chart.
    decode = stocked.client.get(BOARD, params={"recipe": SLUG}).json()["items"]
    assert decode == []
    page = stocked.client.get("/leaderboard?metric=users_at_slo").text
    assert page.count('<table class="board">') == 2
    assert "per_user_tok_s&gt;=80,ttft_p90_ms&lt;=5000,error_rate&lt;=0 · profile quick v2" in page


def test_the_recipe_page_shows_users_at_an_slo_and_the_chart_leaves_them_out(stocked, results):
    assert _post(stocked, results["a1"]).status_code == 201
    page = stocked.client.get(f"/r/{SLUG}").text
    block = page.split('<h2 id="users-at-slo">Users at an SLO</h2>', 1)[1].split("<h2>", 1)[0]
    assert "<strong>2</strong>" in block
    assert "≥ 80 tok/s each, TTFT p90 ≤ 5 s, no failed request" in block
    assert "quick v2" in block and "per-user rate" in block
    assert "measured, consistent with its journal" in block
    assert "metric=users_at_slo" in block
    record = stocked.client.get(f"/api/v1/recipes/{SLUG}.json").json()
    from rigbook.recipe.load import parse_recipe

    assert perf_chart(parse_recipe(record, SLUG)) == ""  # its only point is a capacity


def test_slo_scope_is_canonical():
    assert slo_scope(SLO_A, "quick v2") == slo_scope(SLO_A_AGAIN, " quick  v2")
    assert slo_scope(SLO_A, "quick v2") != slo_scope(SLO_A, "seed v2")
    assert slo_scope(SLO_A, "quick v2") != slo_scope(SLO_B, "quick v2")
    assert slo_scope("not an slo", None) == "not an slo · profile not stated"
    assert len(slo_scope("x<=1," * 200, "quick v2")) <= 300


def test_the_migration_puts_stored_capacity_points_on_their_board(db_url, results):
    """A hub at 0002 whose recipe already holds a capacity point (ranked then as tok/s) moves it
    to the users_at_slo board on upgrade: on SQLite and on PostgreSQL."""
    from alembic import command
    from alembic.config import Config

    from rigbook.hub.migrate import MIGRATIONS

    point = CapacityResult.model_validate_json(results["a1"].read_text()).perf_points[0]
    record = _recipe() | {
        "perf_points": [point.model_dump(mode="json", exclude_none=True) | {"claimed_by": "x"}]
    }
    engine = create_engine(db_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0002")
        conn.execute(
            text(
                "INSERT INTO recipes (slug, title, latest_no, models, card_families, device_count, "
                "tags, search_text, created_at, updated_at) "
                "VALUES (:s, 't', 1, '|', '|', 0, '|', '', 'x', 'x')"
            ),
            {"s": SLUG},
        )
        conn.execute(
            text(
                "INSERT INTO revisions (slug, no, content_hash, created_at, record) "
                "VALUES (:s, 1, 'h', 'x', :r)"
            ),
            {"s": SLUG, "r": json.dumps(record)},
        )
        # What 0002's board held for it: the point as a tok/s number at its concurrency.
        conn.execute(
            text(
                "INSERT INTO board (slug, revision_no, metric, scope, model, card, device_count, "
                "concurrency, measured, evidence, value, rank, entry) VALUES (:s, 1, "
                "'decode_tok_s', '', 'm', 'CPU', 0, 2, false, 'claimed', 1.0, 1, '{}')"
            ),
            {"s": SLUG},
        )
        command.upgrade(config, "head")
        rows = conn.execute(text("SELECT metric, scope, value, rank FROM board")).all()
    assert [(r.metric, r.value, r.rank) for r in rows] == [("users_at_slo", 2.0, 1)]
    assert rows[0].scope == slo_scope(SLO_A, "quick v2")
    engine.dispose()
    app = create_app(db_url, load_builtin=False, limits=GENEROUS)
    items = TestClient(app).get(f"{BOARD}?metric=users_at_slo").json()["items"]
    assert [e["value"] for e in items] == [2.0]
    app.state.engine.dispose()


@contextmanager
def hub_with_the_recipe(tmp_path: Path) -> Iterator[tuple[CliRunner, str, str]]:
    """A real hub on loopback holding the test recipe, published through the CLI: (runner, its
    URL, a write token)."""
    app = create_app(f"sqlite:///{tmp_path / 'hub.sqlite3'}")
    token = create_token(app.state.sessions, "cli")
    recipe_file = tmp_path / "recipe.json"
    recipe_file.write_text(json.dumps(_recipe()))
    runner = CliRunner()
    try:
        with live_hub(app) as url:
            made = runner.invoke(cli, ["publish", str(recipe_file), "--hub", url, "--token", token])
            assert made.exit_code == 0, made.output
            yield runner, url, token
    finally:
        app.state.engine.dispose()


def test_publish_a_capacity_file_to_a_real_hub(tmp_path, results):
    with hub_with_the_recipe(tmp_path) as (runner, url, token):
        done = runner.invoke(
            cli, ["publish", str(results["a1"]), "--hub", url, "--token", token, "--json"]
        )
        assert done.exit_code == 0, done.output
        answer = json.loads(done.stdout)
        assert answer["kind"] == "capacity" and answer["points_added"] == 1
        assert answer["verified"] == 1 and answer["slug"] == SLUG
        again = runner.invoke(cli, ["publish", str(results["a1"]), "--hub", url, "--token", token])
        assert again.exit_code == 0 and "already published" in again.stdout
        wrong = runner.invoke(
            cli,
            ["publish", str(results["a1"]), "--hub", url, "--token", token, "--recipe", "other"],
        )
        assert wrong.exit_code == 2 and "E_INPUT" in wrong.stderr


def _older(path: Path, out: Path) -> Path:
    """``path`` as a rigbook before ``result_file`` and ``warmup`` existed wrote it: those fields
    absent, the hash over what is left."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    for probe in raw["probes"]:
        probe.pop("result_file", None)
    raw["bench"].pop("warmup", None)
    raw["content_hash"] = hash_as_written(raw)
    # Written with its own layout (no indent), which a re-serialised copy would not keep.
    out.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    return out


def test_publish_sends_the_capacity_file_as_written(tmp_path, results, monkeypatch):
    older = _older(results["a1"], tmp_path / "older.json")
    sent: list[bytes] = []
    real = httpx.request

    def spy(method, url, **kwargs):
        if url.endswith("/capacity"):
            sent.append(kwargs.get("content"))
        return real(method, url, **kwargs)

    monkeypatch.setattr(httpx, "request", spy)
    with hub_with_the_recipe(tmp_path) as (runner, url, token):
        done = runner.invoke(cli, ["publish", str(older), "--hub", url, "--token", token, "--json"])
        assert done.exit_code == 0, done.output
        answer = json.loads(done.stdout)
        assert answer["kind"] == "capacity" and answer["points_added"] == 1
        assert answer["verified"] == 1
        stored = httpx.get(f"{url}/api/v1/recipes/{SLUG}.json").json()
    # The bytes of the file, not a copy re-serialised by this version (which would add the
    # fields this "older" file lacks and no longer match its hash).
    assert sent == [older.read_bytes()]
    assert [p["users_at_slo"] for p in stored["perf_points"] if p.get("users_at_slo")] == [2]


def test_the_hub_checks_the_hash_on_the_json_as_posted(stocked, results, tmp_path):
    older = _older(results["a1"], tmp_path / "older.json")
    posted = stocked.client.post(
        f"/api/v1/recipes/{SLUG}/capacity",
        headers={**stocked.auth, "content-type": "application/json"},
        content=older.read_bytes(),
    )
    assert posted.status_code == 201, posted.text
    # The same file re-serialised with one number changed is refused for its hash.
    raw = json.loads(older.read_text(encoding="utf-8"))
    raw["answer"]["aggregate_tok_s"] = (raw["answer"]["aggregate_tok_s"] or 0) + 1
    refused = stocked.client.post(
        f"/api/v1/recipes/{SLUG}/capacity", headers=stocked.auth, json=raw
    )
    assert refused.status_code == 422, refused.text
    assert any("content_hash" in d for d in refused.json()["error"]["details"])
