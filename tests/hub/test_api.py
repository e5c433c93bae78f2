"""API v1 against SQLite and PostgreSQL: every test here runs on both (the ``db_url`` fixture)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import rigbook.recipe
from rigbook.hub.rates import Limits, Rate
from rigbook.recipe.catalog import list_recipes
from rigbook.recipe.hash import recipe_hash
from rigbook.recipe.load import parse_recipe
from tests.hub.helpers import SMALL_SLUG, make_result, point_conditions

SEED_SLUG = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"
FOUR_GPU_SLUG = "glm-5-3-flash-on-4x-rtx-pro-6000-blackwell-tensorfold-250w"
# What the hub owns in a record: set on every write, added to an imported record that lacks them.
HUB_OWNED = ("revision", "links", "speeds", "created_at", "updated_at")
CATALOG = Path(rigbook.recipe.__file__).parent / "catalog"


def same_json(a, b) -> bool:
    """Equal as JSON text: same keys in the same order, and 207 is not 207.0."""
    return json.dumps(a) == json.dumps(b)


def with_hub_hash(record: dict) -> dict:
    """``record`` with the one value an import changes: ``revision.content_hash`` becomes rigbook's hash."""
    return record | {
        "revision": record["revision"] | {"content_hash": recipe_hash(parse_recipe(record))}
    }


def test_fresh_hub_serves_the_builtin_catalog(hub):
    page = hub.client.get("/api/v1/recipes").json()
    assert page["total"] == len(list_recipes())
    assert sorted(r["slug"] for r in page["items"]) == sorted(r.slug for r in list_recipes())
    for item in page["items"]:
        assert item["revision"]["content_hash"] == recipe_hash(parse_recipe(item))
        assert item["links"]["self"] == f"/api/v1/recipes/{item['slug']}.json"


def test_fresh_hub_serves_each_catalog_file_as_written(hub):
    for path in sorted(CATALOG.glob("*.json")):
        given = json.loads(path.read_text())
        served = hub.client.get(f"/api/v1/recipes/{given['slug']}.json").json()
        # Every field of the file, in its order and with its number types; the hub adds only what it owns.
        assert set(served) - set(given) <= set(HUB_OWNED), path.name
        expected = with_hub_hash(given) if "revision" in given else given
        assert same_json({key: served[key] for key in given}, expected), path.name
        assert served["revision"]["content_hash"] == recipe_hash(parse_recipe(given))
    seed = hub.client.get(f"/api/v1/recipes/{SEED_SLUG}.json").json()
    assert seed["speeds"]["decode_tok_s"] == 207 and isinstance(seed["speeds"]["decode_tok_s"], int)


def test_seed_record_imported_as_is_is_served_as_the_record(make_hub, seed_record):
    from rigbook.hub.repository import import_record

    hub = make_hub(load_builtin=False)
    assert import_record(hub.app.state.sessions, seed_record)
    served = hub.client.get(f"/api/v1/recipes/{SEED_SLUG}.json")
    assert served.status_code == 200
    # The record exactly as given (order, number types, links, speeds, times); only the hash is the hub's own.
    assert same_json(served.json(), with_hub_hash(seed_record))
    assert served.json()["revision"]["content_hash"] != seed_record["revision"]["content_hash"]


def test_seed_record_posted_keeps_its_shape(make_hub, seed_record):
    hub = make_hub(load_builtin=False)
    posted = hub.client.post("/api/v1/recipes", json=seed_record, headers=hub.auth)
    assert posted.status_code == 201, posted.text
    body = hub.client.get(f"/api/v1/recipes/{SEED_SLUG}.json").json()
    assert same_json(body, posted.json())
    assert list(body) == list(seed_record)
    assert same_json(
        {k: v for k, v in body.items() if k not in HUB_OWNED},
        {k: v for k, v in seed_record.items() if k not in HUB_OWNED},
    )
    assert body["revision"]["no"] == 1
    assert body["revision"]["content_hash"] == recipe_hash(parse_recipe(seed_record))
    assert body["links"] == seed_record["links"] and body["speeds"] == seed_record["speeds"]


def test_filters_and_paging(hub):
    def slugs(**params):
        page = hub.client.get("/api/v1/recipes", params=params).json()
        assert page["total"] == len(page["items"])
        return {r["slug"] for r in page["items"]}

    catalog = list_recipes()
    assert slugs(model="glm-5-3-flash") == {
        r.slug for r in catalog if r.models[0].slug == "glm-5-3-flash"
    }
    assert slugs(card_family="h200") == {SMALL_SLUG}
    assert slugs(device_count=4) == {r.slug for r in catalog if r.gpu_count == 4}
    assert slugs(engine="tensorfold") == {r.slug for r in catalog if r.engine == "tensorfold"}
    assert slugs(tag="mtp3") == {SEED_SLUG}
    assert slugs(tier="builtin") == {
        "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp",
        "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp-docker",
    }
    assert slugs(model="glm-5-3-flash", device_count=2, tag="fp8-kv") == {
        SEED_SLUG,
        "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w",
    }
    assert slugs(q="smollm2 cpu") == {
        "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp",
        "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp-ngram",
        "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp-docker",
        "smollm2-135m-instruct-on-cpu-vllm",
    }
    assert slugs(tag="100%") == set()
    seen, url = [], "/api/v1/recipes?limit=2"
    while url:
        page = hub.client.get(url).json()
        assert page["total"] == len(catalog) and len(page["items"]) <= 2
        seen += [r["slug"] for r in page["items"]]
        url = page["next"]
    assert seen == sorted(r.slug for r in catalog)
    bad = hub.client.get("/api/v1/recipes", params={"limit": 0, "device_count": "two"})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "E_INPUT"
    assert {line.split(":")[0] for line in bad.json()["error"]["details"]} == {
        "query.limit",
        "query.device_count",
    }


def test_posting_again_adds_the_next_revision(hub, seed_record):
    first = hub.client.get(f"/api/v1/recipes/{SEED_SLUG}.json").json()
    changed = copy.deepcopy(seed_record)
    changed["title"] += " (retuned)"
    second = hub.client.post("/api/v1/recipes", json=changed, headers=hub.auth).json()
    third = hub.client.post(
        "/api/v1/recipes", json=changed | {"summary": "shorter"}, headers=hub.auth
    ).json()
    assert [second["revision"]["no"], third["revision"]["no"]] == [
        first["revision"]["no"] + 1,
        first["revision"]["no"] + 2,
    ]
    assert third["revision"]["content_hash"] == recipe_hash(
        parse_recipe(changed | {"summary": "shorter"})
    )
    assert (
        third["created_at"] == first["created_at"] and third["updated_at"] >= second["updated_at"]
    )
    history = hub.client.get(f"/api/v1/recipes/{SEED_SLUG}/revisions").json()["revisions"]
    assert [r["no"] for r in history] == [2, 3, 4]
    assert history[-1]["content_hash"] == third["revision"]["content_hash"]
    assert hub.client.get("/api/v1/recipes/nope/revisions").status_code == 404
    tiny = {"slug": "tiny", "title": "tiny", "config": {"launch": ["true"]}}
    answers = [hub.client.post("/api/v1/recipes", json=tiny, headers=hub.auth) for _ in range(2)]
    # The same content again is the same revision (200), not a new one.
    assert [a.status_code for a in answers] == [201, 200]
    assert answers[0].json() == answers[1].json()
    served = answers[1].json()
    assert (
        served["revision"]["no"] == 1
    )  # nothing added but the hub's own fields, after the record's
    assert list(served)[: len(tiny)] == list(tiny) and set(served) == set(tiny) | set(HUB_OWNED)
    assert [
        r["no"] for r in hub.client.get("/api/v1/recipes/tiny/revisions").json()["revisions"]
    ] == [1]


def test_every_write_needs_a_known_token(hub, seed_record):
    for headers in (
        {},
        {"Authorization": "Bearer rbk_not-a-token"},
        {"Authorization": "Basic abc"},
    ):
        for path, body in (
            ("/api/v1/recipes", seed_record),
            (f"/api/v1/recipes/{SMALL_SLUG}/results", make_result().model_dump(mode="json")),
        ):
            answer = hub.client.post(path, json=body, headers=headers)
            assert answer.status_code == 401 and answer.json()["error"]["code"] == "E_AUTH"
    assert (
        hub.client.get(f"/api/v1/recipes/{SEED_SLUG}/revisions").json()["revisions"][-1]["no"] == 2
    )


def test_invalid_recipe_is_422_with_field_paths(hub):
    answer = hub.client.post(
        "/api/v1/recipes",
        json={
            "slug": "Not A Slug",
            "config": {"launch": "docker run"},
            "hardware": [{"slug": "x", "vendor": "v", "card": "c", "device_count": -1}],
        },
        headers=hub.auth,
    )
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "E_RECIPE_INVALID"
    paths = {line.split(":")[0] for line in error["details"]}
    assert {"slug", "title", "config.launch", "hardware.0.device_count"} <= paths
    nan = hub.client.post(
        "/api/v1/recipes",
        content=b'{"slug": "a", "title": "t", "config": {"launch": []}, '
        b'"perf_points": [{"decode_tok_s": NaN}]}',
        headers=hub.auth | {"content-type": "application/json"},
    )
    assert nan.status_code == 422


def test_result_adds_measured_points_to_recipe_page_and_leaderboard(hub):
    result = make_result()
    answer = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        json=result.model_dump(mode="json"),
        headers=hub.auth,
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["points_added"] == 2
    record = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()
    measured = [p for p in record["perf_points"] if p["claimed_by"] == "measured"]
    assert [p["decode_tok_s"] for p in measured] == [321.46, 900.2539]  # the API keeps every digit
    assert measured[0]["conditions"]["power_limit_w_per_gpu"] == 700.0
    assert record["revision"]["no"] == answer.json()["revision"] == 2
    assert record["revision"]["content_hash"] == recipe_hash(parse_recipe(record))
    assert record["speeds"]["decode_tok_s"] == 321.46

    board = hub.client.get(
        "/api/v1/leaderboard.json",
        params={"model": "smollm2-135m-instruct", "device_count": 1, "concurrency": 4},
    ).json()
    assert [(e["value"], e["evidence"], e["rank"]) for e in board["items"]] == [
        (900.2539, "measured-unverified", 1)
    ]
    assert board["items"][0]["conditions"]["card"] == "NVIDIA H200"
    assert board["items"][0]["published_by"] == "test-1"
    glm = hub.client.get(
        "/api/v1/leaderboard.json", params={"model": "glm-5-3-flash", "device_count": 2}
    ).json()
    assert glm["items"] and all(e["evidence"] == "claimed" for e in glm["items"])

    page = hub.client.get(f"/r/{SMALL_SLUG}").text
    assert (
        "900.3" in page
        and "900.2539" not in page
        and "<svg" in page
        and "power_limit_w_per_gpu=700.0" in page
    )
    assert "900.3" in hub.client.get("/leaderboard").text

    again = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        json=result.model_dump(mode="json"),
        headers=hub.auth,
    )
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()["revision"]["no"] == 2


def test_a_measured_point_shows_only_what_its_result_recorded(hub):
    # The recipe says kv_cache_dtype f16 and engine "llama-cpp-python 0.3.36"; the result recorded neither.
    conditions = point_conditions(engine_version=None)
    answer = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        headers=hub.auth,
        json=make_result(conditions=conditions).model_dump(mode="json"),
    )
    assert answer.status_code == 201, answer.text
    recorded = conditions.model_dump(mode="json", exclude_none=True)
    entries = hub.client.get("/api/v1/leaderboard.json", params={"evidence": "measured"}).json()[
        "items"
    ]
    assert len(entries) == 2 and all(e["conditions"] == recorded for e in entries)
    rows = hub.client.get(f"/r/{SMALL_SLUG}").text.split('<tr class="measured-unverified">')[1:]
    assert len(rows) == 2
    assert all(
        "kv_cache_dtype" not in row and "engine_version" not in row and "card=NVIDIA H200" in row
        for row in rows
    )


def test_pages_round_numbers_and_the_api_keeps_them(hub):
    conditions = point_conditions(energy_j_per_token=0.123456789)
    result = make_result(decode=(196.71078833504683, 612.0049999), conditions=conditions)
    assert (
        hub.client.post(
            f"/api/v1/recipes/{SMALL_SLUG}/results",
            json=result.model_dump(mode="json"),
            headers=hub.auth,
        ).status_code
        == 201
    )
    for path in (f"/r/{SMALL_SLUG}", "/leaderboard"):
        page = hub.client.get(path).text
        assert "196.7 " in page or "196.7<" in page, path
        assert "196.710" not in page and "612.004" not in page and "0.1234" not in page, path
        assert "energy_j_per_token=0.123" in page, path
    assert "612.0" in hub.client.get("/leaderboard").text
    assert "196.7 tok/s single request" in hub.client.get("/?q=h200").text
    record = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()
    assert record["perf_points"][-2]["decode_tok_s"] == 196.71078833504683
    assert record["perf_points"][-2]["conditions"]["energy_j_per_token"] == 0.123456789


def test_a_recipe_write_cannot_carry_measured_points(hub, seed_record):
    forged = copy.deepcopy(seed_record)
    forged["perf_points"][0] |= {"claimed_by": "measured", "decode_tok_s": 99999.0}
    forged["perf_points"][2]["claimed_by"] = " Measured"
    answer = hub.client.post("/api/v1/recipes", json=forged, headers=hub.auth)
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "E_RECIPE_INVALID"
    assert [line.split(":")[0] for line in error["details"]] == [
        "perf_points.0.claimed_by",
        "perf_points.2.claimed_by",
    ]
    assert "published bench result" in error["details"][0]
    assert "99999" not in hub.client.get("/api/v1/leaderboard.json").text
    assert (
        hub.client.get(f"/api/v1/recipes/{SEED_SLUG}/revisions").json()["revisions"][-1]["no"] == 2
    )


def test_measured_points_survive_new_revisions_of_the_recipe(hub):
    given = json.loads((CATALOG / f"{SMALL_SLUG}.json").read_text())
    assert (
        hub.client.post(
            f"/api/v1/recipes/{SMALL_SLUG}/results",
            json=make_result().model_dump(mode="json"),
            headers=hub.auth,
        ).status_code
        == 201
    )
    for summary in ("One word changed.", "Two words changed."):
        answer = hub.client.post(
            "/api/v1/recipes", json=given | {"summary": summary}, headers=hub.auth
        )
        assert answer.status_code == 201, answer.text
        record = answer.json()
        measured = [
            p["decode_tok_s"] for p in record["perf_points"] if p["claimed_by"] == "measured"
        ]
        assert measured == [321.46, 900.2539]  # carried once, not duplicated
        assert record["summary"] == summary
        assert record["revision"]["content_hash"] == recipe_hash(parse_recipe(record))
    board = hub.client.get("/api/v1/leaderboard.json", params={"evidence": "measured"}).json()
    assert [(e["recipe"], e["value"], e["revision"]) for e in board["items"]] == [
        (SMALL_SLUG, 321.46, 4),
        (SMALL_SLUG, 900.2539, 4),
    ]  # the board follows the latest revision
    assert hub.client.get(f"/r/{SMALL_SLUG}").text.count('<tr class="measured-unverified">') == 2

    # Moved to other hardware, the points no longer describe the recipe: left behind, and the revision says why.
    moved = given | {"hardware": [given["hardware"][0] | {"device_count": 2}]}
    record = hub.client.post("/api/v1/recipes", json=moved, headers=hub.auth).json()
    assert [p for p in record["perf_points"] if p["claimed_by"] == "measured"] == []
    assert "2 measured point(s) of earlier results not carried" in record["revision"]["notes"]
    assert (
        "revision 4 perf_points.1.conditions.gpu_count: the recipe runs on 2 GPU(s); got 1"
        in record["revision"]["notes"]
    )


def test_a_result_must_fit_its_recipe(hub):
    def publish(slug, result):
        return hub.client.post(
            f"/api/v1/recipes/{slug}/results", json=result.model_dump(mode="json"), headers=hub.auth
        )

    def reasons(answer):
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["code"] == "E_RESULT_REFUSED"
        return answer.json()["error"]["details"]

    cpu = point_conditions(gpu_count=0, card=None, power_limit_w_per_gpu=None, engine="synthetic")
    synthetic = make_result(
        FOUR_GPU_SLUG, conditions=cpu, model="synthetic", power=None, gpu_names=()
    )
    assert set(reasons(publish(FOUR_GPU_SLUG, synthetic))) >= {
        "perf_points.0.conditions.gpu_count: the recipe runs on 4 GPU(s); got 0",
        "perf_points.1.conditions.gpu_count: the recipe runs on 4 GPU(s); got 0",
        "conditions.rig.gpus: the recipe runs on 4 GPU(s); the rig lists 0",
    }
    h200s = make_result(
        FOUR_GPU_SLUG,
        decode=(50.0,),
        model="glm-5.3-flash",
        conditions=point_conditions(gpu_count=4, engine="tensorfold"),
        gpu_names=("NVIDIA H200",) * 4,
    )
    assert (
        "perf_points.0.conditions.card: not the recipe's card family (RTX PRO 6000 Blackwell); got 'NVIDIA H200'"
        in (reasons(publish(FOUR_GPU_SLUG, h200s)))
    )
    other_model = make_result(model="qwen3-0.6b")
    assert reasons(publish(SMALL_SLUG, other_model)) == [
        "conditions.model: the recipe's server answers to 'smollm2-135m-instruct'; the result measured 'qwen3-0.6b'"
    ]
    assert hub.client.get(f"/api/v1/recipes/{FOUR_GPU_SLUG}.json").json()["revision"]["no"] == 1

    # Another variant of the same card (Max-Q of an RTX PRO 6000 Blackwell); a recipe without a model id takes
    # another name of its model from the model table: accepted.
    card = "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"
    fits = make_result(
        FOUR_GPU_SLUG,
        decode=(80.0,),
        model="glm-5.3-flash",
        gpu_names=(card,) * 4,
        power=250.0,  # the rig's enforced limit is the points' (a Max-Q is rated 300 W)
        conditions=point_conditions(
            gpu_count=4, card=card, power_limit_w_per_gpu=250.0, engine="tensorfold"
        ),
    )
    assert publish(FOUR_GPU_SLUG, fits).status_code == 201


def test_result_with_missing_conditions_or_bad_hash_is_refused_with_every_reason(hub):
    incomplete = make_result(
        conditions=point_conditions(
            power_limit_w_per_gpu=None, quant=None, sampling=None, token_count_source=None
        ),
        power=None,
    )
    body = incomplete.model_dump(mode="json")
    body["perf_points"][0]["decode_tok_s"] = 9999.0  # edited after hashing
    answer = hub.client.post(f"/api/v1/recipes/{SMALL_SLUG}/results", json=body, headers=hub.auth)
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "E_RESULT_REFUSED"
    text = "\n".join(error["details"])
    for reason in (
        "content_hash",
        "conditions.rig.gpus.0.power_enforced_limit_w",
        "perf_points.0.conditions.quant",
        "perf_points.1.conditions.power_limit_w_per_gpu",
        "perf_points.0.conditions.sampling",
        "perf_points.0.conditions.token_count_source",
    ):
        assert reason in text
    other = make_result("glm-5-3-flash-on-4x-rtx-pro-6000-blackwell-tensorfold-250w")
    wrong = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        json=other.model_dump(mode="json"),
        headers=hub.auth,
    )
    assert wrong.status_code == 422 and "conditions.recipe_slug" in wrong.text
    shapeless = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results", json={"conditions": {}}, headers=hub.auth
    )
    assert shapeless.status_code == 422 and shapeless.json()["error"]["code"] == "E_RESULT_REFUSED"
    assert "conditions.url" in "\n".join(shapeless.json()["error"]["details"])
    missing = hub.client.post(
        "/api/v1/recipes/nope/results",
        json=make_result("nope").model_dump(mode="json"),
        headers=hub.auth,
    )
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "E_RECIPE_NOT_FOUND"
    assert hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()["revision"].get("no") == 1


def test_rate_limit_per_token(make_hub, seed_record):
    hub = make_hub(limits=Limits(writes_per_token=Rate(limit=2)))
    codes = [
        hub.client.post(
            "/api/v1/recipes", json=seed_record | {"title": f"t{i}"}, headers=hub.auth
        ).status_code
        for i in range(3)
    ]
    assert codes == [201, 201, 429]
    refused = hub.client.post("/api/v1/recipes", json=seed_record, headers=hub.auth)
    assert (
        refused.json()["error"]["code"] == "E_RATE_LIMIT"
        and 1 <= int(refused.headers["retry-after"]) <= 60
    )


def test_body_size_limit_counts_the_stream(make_hub, seed_record):
    hub = make_hub(max_body=4096)
    big = json.dumps(seed_record | {"summary": "x" * 5000}).encode()
    declared = hub.client.post(
        "/api/v1/recipes", content=big, headers=hub.auth | {"content-type": "application/json"}
    )
    assert declared.status_code == 413 and declared.json()["error"]["code"] == "E_TOO_LARGE"

    def chunks():  # no Content-Length: sent chunked, counted as it arrives
        for i in range(0, len(big), 1000):
            yield big[i : i + 1000]

    streamed = hub.client.post(
        "/api/v1/recipes", content=chunks(), headers=hub.auth | {"content-type": "application/json"}
    )
    assert streamed.status_code == 413 and streamed.json()["error"]["code"] == "E_TOO_LARGE"
    small = {k: seed_record[k] for k in ("slug", "title", "config")}
    assert hub.client.post("/api/v1/recipes", json=small, headers=hub.auth).status_code == 201


def test_user_text_is_escaped_on_pages(hub, seed_record):
    evil = seed_record | {
        "slug": "evil",
        "title": "<script>alert(1)</script>",
        "summary": "<img src=x onerror=alert(2)>",
        "tags": ["<b>tag</b>"],
    }
    evil["perf_points"] = [
        dict(p, notes="<script>n()</script>") for p in seed_record["perf_points"]
    ]
    assert hub.client.post("/api/v1/recipes", json=evil, headers=hub.auth).status_code == 201
    for path in ("/r/evil", "/", "/?q=%3Cscript%3E", "/leaderboard"):
        html = hub.client.get(path).text
        assert "<script>" not in html and "<img src=x" not in html
    page = hub.client.get("/r/evil").text
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        and "&lt;script&gt;n()&lt;/script&gt;" in page
    )


def test_openapi_and_pages_exist(hub):
    spec = hub.client.get("/openapi.json").json()
    assert {
        "/api/v1/recipes",
        "/api/v1/recipes/{slug}.json",
        "/api/v1/recipes/{slug}/revisions",
        "/api/v1/recipes/{slug}/results",
        "/api/v1/leaderboard.json",
    } <= set(spec["paths"])
    assert hub.client.get("/r/nope").status_code == 404
    assert (
        hub.client.get("/api/v1/recipes/nope.json").json()["error"]["code"] == "E_RECIPE_NOT_FOUND"
    )


def test_errors_are_worded_for_http(hub):
    for path, code in (
        ("/api/v1/recipes", "E_RECIPE_INVALID"),
        (f"/api/v1/recipes/{SMALL_SLUG}/results", "E_RESULT_REFUSED"),
    ):
        answer = hub.client.post(
            path, content=b'{"slug": "a",', headers=hub.auth | {"content-type": "application/json"}
        )
        assert answer.status_code == 422
        error = answer.json()["error"]
        assert (error["code"], error["message"]) == (code, "the request body is not valid JSON")
        assert len(error["details"]) == 1 and error["details"][0].startswith(
            "(body): not valid JSON ("
        )
        assert "got {}" not in answer.text
    wrong_method = hub.client.post("/api/v1/leaderboard.json", headers=hub.auth)
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "GET, HEAD"
    error = wrong_method.json()["error"]
    assert error["code"] == "E_METHOD"
    assert error["message"] == "POST is not allowed on /api/v1/leaderboard.json; allowed: GET, HEAD"
    assert "--help" not in error["remedy"] and "/openapi.json" in error["remedy"]
    bad_query = hub.client.get("/api/v1/recipes", params={"limit": 0}).json()["error"]
    assert (
        bad_query["code"] == "E_INPUT"
        and "--help" not in bad_query["remedy"]
        and "/openapi.json" in bad_query["remedy"]
    )
    unknown = hub.client.get("/api/v1/nothing-here").json()["error"]
    assert unknown["message"] == "nothing at /api/v1/nothing-here on this hub"
