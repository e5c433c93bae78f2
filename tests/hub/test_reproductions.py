"""Reproductions on the hub (issue 37), on SQLite and PostgreSQL: stored with their evidence, shown on the
recipe's page and in its JSON, the verdict recomputed and a document that does not match refused."""

from __future__ import annotations

import json

from rigbook.bench.intervals import Interval
from rigbook.bench.result import BenchResult, LevelInterval
from rigbook.hub.signing import create_key, load_key, public_key_of, sign, signed_message
from rigbook.recipe.hash import recipe_hash
from rigbook.recipe.load import parse_recipe
from rigbook.reproduce.document import ReproductionDocument, build_document, judged_rows
from tests.hub.helpers import SMALL_SLUG, make_result

SLUG = "smollm2-135m-on-one-h200-with-claims"
SINGLE, FOUR = 321.46, 900.2539


def _interval(mean: float) -> Interval:
    return Interval(n=5, mean=mean, low=mean * 0.98, high=mean * 1.02, half_width_pct=2.0)


def claims_recipe(hub, claims: tuple[float, float]) -> dict:
    """The small H200 recipe under another slug, claiming ``claims`` tok/s: one request's decode
    rate, and the aggregate of four."""
    record = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()
    for key in ("revision", "links", "speeds", "created_at", "updated_at"):
        record.pop(key, None)
    record |= {
        "slug": SLUG,
        "title": "smollm2 on one H200, with claims",
        "perf_points": [
            {
                "concurrency": 1,
                "context_len": 512,
                "decode_tok_s": claims[0],
                "claimed_by": "submitter",
                "conditions": {"rate_definition": "per_request_decode"},
            },
            {
                "concurrency": 4,
                "context_len": 512,
                "decode_tok_s": claims[1],
                "claimed_by": "submitter",
                "conditions": {"rate_definition": "aggregate_with_ttft"},
            },
        ],
    }
    answer = hub.client.post("/api/v1/recipes", json=record, headers=hub.auth)
    assert answer.status_code == 201, answer.text
    return answer.json()


def measured() -> BenchResult:
    """A result at 1 and 4 users with an interval of ±2 % on each rate."""
    result = make_result(SLUG)
    intervals = [
        LevelInterval(
            concurrency=p.concurrency or 0,
            repeats=5,
            aggregate_tok_s=_interval(p.decode_tok_s or 0.0),
            per_request_decode_tok_s_median=_interval(p.per_request_decode_tok_s_median or 0.0),
            target_pct=2.0,
            met=True,
            stopped_by="target",
        )
        for p in result.perf_points
    ]
    assert result.conditions.profile is not None
    profile = result.conditions.profile.model_copy(update={"name": "seed"})
    conditions = result.conditions.model_copy(update={"profile": profile})
    return result.model_copy(update={"intervals": intervals, "conditions": conditions}).with_hash()


def reproduction(record: dict, result: BenchResult) -> ReproductionDocument:
    recipe = parse_recipe(record, SLUG)
    profile = "seed"
    rows, assumed = judged_rows(recipe, result, profile=profile, levels=[1, 4], max_tokens=400)
    return build_document(
        SLUG,
        record["revision"]["content_hash"],
        result,
        profile=profile,
        levels=[1, 4],
        max_tokens=400,
        rows=rows,
        assumed=assumed,
    )


def publish_result(hub, result: BenchResult) -> None:
    answer = hub.client.post(
        f"/api/v1/recipes/{SLUG}/results",
        json=json.loads(result.model_dump_json()),
        headers=hub.auth,
    )
    assert answer.status_code == 201, answer.text


def post(hub, doc: ReproductionDocument | dict, headers: dict | None = None):
    body = doc if isinstance(doc, dict) else doc.model_dump(mode="json")
    return hub.client.post(
        f"/api/v1/recipes/{SLUG}/reproductions", json=body, headers=hub.auth | (headers or {})
    )


def refused(answer) -> list[str]:
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "E_REPRODUCTION_REFUSED"
    return answer.json()["error"]["details"]


def rehashed(doc: ReproductionDocument, **changes) -> ReproductionDocument:
    return doc.model_copy(update=changes).with_hash()


def test_a_reproduction_shows_on_the_recipe_page_and_in_its_json(hub):
    # One request's claim is inside the interval, four users' aggregate above it: does not hold.
    record = claims_recipe(hub, (SINGLE, FOUR * 1.10))
    result = measured()
    publish_result(hub, result)
    doc = reproduction(record, result)
    assert [r.call for r in doc.rows] == ["within spread", "real difference"]
    answer = post(hub, doc)
    assert answer.status_code == 201, answer.text
    accepted = answer.json()
    assert accepted["reproduced_revision"] == record["revision"]["no"]
    assert accepted["verdict"] == doc.verdict == "does not hold"

    served = hub.client.get(f"/api/v1/recipes/{SLUG}.json").json()
    (entry,) = served["reproductions"]
    assert entry["verdict"] == "does not hold"
    assert entry["reproduced_revision"] == record["revision"]["no"]
    assert (entry["card"], entry["gpu_count"], entry["power_limit_w_per_gpu"]) == (
        "NVIDIA H200",
        1,
        700.0,
    )
    assert [p["concurrency"] for p in entry["points"]] == [1, 4]
    assert entry["points"][1]["call"] == "real difference"
    assert entry["points"][1]["high"] == FOUR * 1.02
    assert entry["evidence"]["result"] == result.content_hash
    # The claims stay claims: the reproduction is not a perf point.
    assert [p["claimed_by"] for p in served["perf_points"]] == [
        "submitter",
        "submitter",
        "measured",
        "measured",
    ]

    evidence = hub.client.get(entry["evidence"]["href"])
    assert evidence.status_code == 200
    assert evidence.json()["content_hash"] == result.content_hash
    stored = hub.client.get(f"/api/v1/recipes/{SLUG}/reproductions/{doc.content_hash}.json")
    assert stored.json()["verdict"] == "does not hold"

    page = hub.client.get(f"/r/{SLUG}").text
    assert "reproduced on 1× NVIDIA H200 at 700 W per card: does not hold" in page
    assert f'href="{entry["evidence"]["href"]}"' in page
    assert "Reproduced on 1 rig(s)." in page

    again = post(hub, doc)
    assert again.status_code == 200 and again.json()["duplicate"] is True


def test_claims_inside_the_intervals_hold(hub):
    record = claims_recipe(hub, (SINGLE, FOUR * 1.01))
    result = measured()
    publish_result(hub, result)
    doc = reproduction(record, result)
    assert [r.call for r in doc.rows] == ["within spread", "within spread"]
    answer = post(hub, doc)
    assert answer.status_code == 201, answer.text
    assert answer.json()["verdict"] == "holds"
    assert (
        "reproduced on 1× NVIDIA H200 at 700 W per card: holds" in hub.client.get(f"/r/{SLUG}").text
    )


def test_a_verdict_or_a_number_the_result_does_not_give_is_refused(hub):
    record = claims_recipe(hub, (SINGLE, FOUR * 1.10))
    result = measured()
    publish_result(hub, result)
    doc = reproduction(record, result)
    details = refused(post(hub, rehashed(doc, verdict="holds")))
    assert details == ["verdict: 'holds', recomputed from the rows 'does not hold'"]
    better = doc.rows[1].model_copy(update={"measured_tok_s": FOUR * 1.2, "call": "within spread"})
    details = refused(post(hub, rehashed(doc, rows=[doc.rows[0], better], verdict="holds")))
    assert any(d.startswith("rows.1.measured_tok_s:") for d in details), details
    assert any(d.startswith("rows.1.call:") for d in details), details
    # A hash that is not the document's own.
    body = doc.model_dump(mode="json") | {"verdict": "holds"}
    assert any(d.startswith("content_hash:") for d in refused(post(hub, body)))
    assert "reproductions" not in hub.client.get(f"/api/v1/recipes/{SLUG}.json").json()


def test_a_reproduction_without_its_evidence_or_revision_on_the_hub_is_refused(hub):
    record = claims_recipe(hub, (SINGLE, FOUR))
    result = measured()
    doc = reproduction(record, result)
    details = refused(post(hub, doc))  # the result was not published first
    assert any(d.startswith("result_hash:") for d in details), details
    publish_result(hub, result)
    details = refused(post(hub, rehashed(doc, recipe_hash="sha256:" + "1" * 64)))
    assert any(d.startswith("recipe_hash:") for d in details), details
    wrong_rig = doc.conditions.model_copy(update={"power_limit_w_per_gpu": 350.0})
    details = refused(post(hub, rehashed(doc, conditions=wrong_rig)))
    assert any(d.startswith("conditions:") for d in details), details


def test_a_signature_covers_the_verdict(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBOOK_HOME", str(tmp_path / "home"))
    create_key()
    private = load_key()
    assert private is not None
    registered = hub.client.post(
        "/api/v1/keys", json={"public_key": public_key_of(private).public_key}, headers=hub.auth
    )
    assert registered.status_code == 201, registered.text
    record = claims_recipe(hub, (SINGLE, FOUR * 1.10))
    result = measured()
    publish_result(hub, result)
    doc = reproduction(record, result)
    body = doc.model_dump(mode="json")
    other = rehashed(doc, verdict="holds").model_dump(mode="json")
    assert signed_message(SLUG, body) != signed_message(SLUG, other)
    # A signature made for another verdict does not verify for this one.
    answer = post(hub, doc, sign(private, SLUG, other))
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "E_SIGNATURE", (
        answer.text
    )
    answer = post(hub, doc, sign(private, SLUG, body))
    assert answer.status_code == 201, answer.text
    assert answer.json()["signed_by"] == public_key_of(private).key_id
    entry = hub.client.get(f"/api/v1/recipes/{SLUG}.json").json()["reproductions"][0]
    assert entry["signed_by"] == public_key_of(private).key_id
    kid = public_key_of(private).key_id
    page = hub.client.get(f"/r/{SLUG}").text
    assert f"signed {kid}</small>" in page
    # Revoked later: the reproduction stays, marked as the key's points are.
    assert hub.client.post(f"/api/v1/keys/{kid}/revoke", headers=hub.auth).status_code == 200
    entry = hub.client.get(f"/api/v1/recipes/{SLUG}.json").json()["reproductions"][0]
    assert entry["signer_revoked_at"]
    assert (
        f"signed {kid}, key revoked {entry['signer_revoked_at']}"
        in hub.client.get(f"/r/{SLUG}").text
    )


def test_a_new_revision_keeps_its_reproductions_and_a_recipe_cannot_bring_its_own(hub):
    record = claims_recipe(hub, (SINGLE, FOUR))
    result = measured()
    publish_result(hub, result)
    assert post(hub, reproduction(record, result)).status_code == 201
    served = hub.client.get(f"/api/v1/recipes/{SLUG}.json").json()
    edited = {k: v for k, v in served.items() if k not in ("reproductions",)}
    edited["perf_points"] = [p for p in edited["perf_points"] if p["claimed_by"] != "measured"]
    edited["summary"] = "now with a summary"
    answer = hub.client.post("/api/v1/recipes", json=edited, headers=hub.auth)
    assert answer.status_code == 201, answer.text
    assert [e["verdict"] for e in answer.json()["reproductions"]] == ["holds"]
    forged = edited | {"reproductions": [{"verdict": "holds"}]}
    answer = hub.client.post("/api/v1/recipes", json=forged, headers=hub.auth)
    assert answer.status_code == 422
    assert any(d.startswith("reproductions:") for d in answer.json()["error"]["details"])


def test_a_recipe_read_from_the_hub_names_its_revision(hub):
    # `rigbook reproduce HUB_URL` hashes the record it read: that must be the revision's own hash, also
    # for a record that carries measured points and reproductions.
    record = claims_recipe(hub, (SINGLE, FOUR))
    result = measured()
    publish_result(hub, result)
    assert post(hub, reproduction(record, result)).status_code == 201
    served = hub.client.get(f"/api/v1/recipes/{SLUG}.json").json()
    assert served["reproductions"]
    assert recipe_hash(parse_recipe(served, SLUG)) == served["revision"]["content_hash"]


def test_a_malformed_reproduction_is_refused_with_its_own_code(hub):
    claims_recipe(hub, (SINGLE, FOUR))
    details = refused(post(hub, {"kind": "rigbook.reproduction.published", "verdict": "holds"}))
    assert any(d.startswith("recipe_hash: Field required") for d in details), details
