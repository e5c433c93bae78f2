"""Measured points need evidence: forged results are refused, a journal-backed one is verified.

Each forgery below was accepted before issue 20; the journal-backed result is
a real bench run against the synthetic server over loopback, so the hub
recomputes it with the bench's own metric code.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rigbook.bench.assemble import assemble
from rigbook.bench.measure import MeasureRequest
from rigbook.bench.plan import RecipeFacts, resolve_plan
from rigbook.bench.result import BenchResult
from rigbook.bench.runner import run_bench
from rigbook.bench.telemetry import Sampler
from tests.bench.helpers import start_synthetic
from tests.hub.helpers import SMALL_SLUG, make_result, point_conditions

SEED_SLUG = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"
MAX_Q = "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"
SYNTHETIC_RECIPE = {
    "slug": "synthetic-on-cpu",
    "title": "the synthetic server on the CPU",
    "config": {"launch": ["true"]},
    "models": [{"slug": "synthetic", "name": "synthetic", "quant": "Q4_1"}],
    "hardware": [],
    "engine_source": {"type": "pip", "base_engine": "llama.cpp"},
    "rigbook": {"serve": {"port": 8080, "model_id": "synthetic"}},
}


def publish(hub, slug: str, result: BenchResult | dict):
    body = result if isinstance(result, dict) else result.model_dump(mode="json")
    return hub.client.post(f"/api/v1/recipes/{slug}/results", json=body, headers=hub.auth)


def refused(answer) -> list[str]:
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "E_RESULT_REFUSED"
    return answer.json()["error"]["details"]


@pytest.fixture(scope="module")
def journal_result(tmp_path_factory) -> BenchResult:
    """A real bench result with every request in its cells (the journal's timings).

    On this shared machine the bench often finds its own event loop late and marks cells client-bound, which
    keeps them from becoming perf points; the cells are then assembled again, as if the client had kept up,
    with the bench's own code: the requests, and so every number, stay the measured ones.
    """
    proc, url = start_synthetic()
    request = MeasureRequest(
        url=url,
        model="synthetic",
        concurrency=[1, 2],
        requests=2,
        max_tokens=40,
        warmup=0,
        out=tmp_path_factory.mktemp("bench") / "r.json",
    )
    # The recipe's facts as a recipe file would give them; the synthetic recipe is not installed.
    facts = RecipeFacts(slug="synthetic-on-cpu", engine="llama.cpp", extra={"quant": "Q4_1"})
    plan = resolve_plan(request).model_copy(update={"recipe": facts})
    try:
        result = asyncio.run(
            run_bench(
                plan,
                rig=None,
                rig_unavailable="a test on the CPU",
                sampler=Sampler(None, "no GPU in tests"),
            )
        )
    finally:
        proc.kill()
        proc.wait()
    cells = [c.model_copy(update={"client_bound": False}) for c in result.cells]
    return assemble(
        result.conditions,
        cells,
        result.telemetry,
        warnings=[],
        journal=result.journal,
        extra={"quant": "Q4_1"},
    )


def test_a_journal_backed_result_is_verified_and_shown_so(hub, journal_result):
    assert (
        hub.client.post("/api/v1/recipes", json=SYNTHETIC_RECIPE, headers=hub.auth).status_code
        == 201
    )
    assert journal_result.perf_points and all(c.requests for c in journal_result.cells)
    answer = publish(hub, "synthetic-on-cpu", journal_result)
    assert answer.status_code == 201, answer.text
    assert (
        answer.json()["verified"]
        == answer.json()["points_added"]
        == len(journal_result.perf_points)
    )
    board = hub.client.get(
        "/api/v1/leaderboard.json", params={"recipe": "synthetic-on-cpu"}
    ).json()["items"]
    assert {(e["evidence"], e["published_by"]) for e in board} == {
        ("consistent-with-journal", "test-1")
    }
    page = hub.client.get("/r/synthetic-on-cpu").text
    assert page.count("measured, consistent with its journal") == len(journal_result.perf_points)
    assert "test-1" in page
    assert "consistent with its journal" in hub.client.get("/leaderboard").text


def test_a_result_without_its_requests_is_measured_unverified(hub, journal_result):
    hub.client.post("/api/v1/recipes", json=SYNTHETIC_RECIPE, headers=hub.auth)
    stripped = journal_result.model_copy(
        update={"cells": [c.model_copy(update={"requests": []}) for c in journal_result.cells]}
    ).with_hash()
    answer = publish(hub, "synthetic-on-cpu", stripped)
    assert answer.status_code == 201, answer.text
    assert answer.json()["verified"] == 0
    board = hub.client.get(
        "/api/v1/leaderboard.json", params={"recipe": "synthetic-on-cpu", "evidence": "measured"}
    ).json()["items"]
    assert {e["evidence"] for e in board} == {"measured-unverified"}
    assert "measured, unverified" in hub.client.get("/r/synthetic-on-cpu").text


def test_rates_times_100_disagree_with_the_journal(hub, journal_result):
    hub.client.post("/api/v1/recipes", json=SYNTHETIC_RECIPE, headers=hub.auth)
    forged = json.loads(journal_result.model_dump_json())
    for point in forged["perf_points"]:
        for key in ("decode_tok_s", "prefill_tok_s", "per_request_decode_tok_s_median"):
            if point.get(key) is not None:
                point[key] *= 100
    for cell in forged["cells"]:
        cell["metrics"]["aggregate_tok_s"] *= 100
    forged = BenchResult.model_validate(forged).with_hash()  # anyone can recompute the hash
    details = refused(publish(hub, "synthetic-on-cpu", forged))
    assert any(
        d.startswith("perf_points.0.decode_tok_s: claims") and "its requests give" in d
        for d in details
    )
    assert any(d.startswith("cells.0.metrics.aggregate_tok_s: claims") for d in details)
    assert hub.client.get("/api/v1/recipes/synthetic-on-cpu.json").json()["revision"]["no"] == 1


@pytest.mark.parametrize("rate", [-5.0, 0.0, 1e300])
def test_impossible_rates_are_refused(hub, rate):
    details = refused(publish(hub, SMALL_SLUG, make_result(decode=(rate,))))
    assert any(d.startswith("perf_points.0.decode_tok_s: ") for d in details), details


def test_a_rate_above_the_bandwidth_ceiling_is_refused(hub):
    # SmolLM2-135M at Q4_1 on one H200: the ceiling is tens of thousands of tok/s, not millions.
    details = refused(publish(hub, SMALL_SLUG, make_result(decode=(5_000_000.0,))))
    assert any(
        "above what the card can do: the memory-bandwidth ceiling is" in d for d in details
    ), details


def test_an_h200_run_relabelled_as_two_rtx_pro_6000s_is_refused(hub):
    relabelled = make_result(
        SEED_SLUG,
        decode=(150.0,),
        model="glm-5.3-flash",
        gpu_names=("NVIDIA H200",),
        conditions=point_conditions(
            gpu_count=2, card=MAX_Q, engine="vllm", quant="nvfp4-csf-mxfp8-attn-qad"
        ),
    )
    details = refused(publish(hub, SEED_SLUG, relabelled))
    assert "conditions.rig.gpus: the recipe runs on 2 GPU(s); the rig lists 1" in details
    assert any(
        d.startswith("conditions.rig.gpus.0.name: not the recipe's card family") for d in details
    )
    assert "perf_points.0.conditions.gpu_count: 2, but the result's rig lists 1 GPU(s)" in details


def test_another_engine_or_quant_is_refused(hub):
    vllm = make_result(conditions=point_conditions(engine="vllm", quant="fp16"))
    details = refused(publish(hub, SMALL_SLUG, vllm))
    assert "conditions.engine: the recipe runs 'llama.cpp'; got 'vllm'" in details
    assert "perf_points.0.conditions.engine: the recipe runs 'llama.cpp'; got 'vllm'" in details
    assert "perf_points.0.conditions.quant: the recipe's model is 'Q4_1'; got 'fp16'" in details


@pytest.mark.parametrize("model", ["instruct", "smollm2-135m-instruct-but-really-qwen", "smollm2"])
def test_only_the_exact_model_id_is_accepted(hub, model):
    assert refused(publish(hub, SMALL_SLUG, make_result(model=model))) == [
        f"conditions.model: the recipe's server answers to 'smollm2-135m-instruct'; the result measured {model!r}"
    ]


LOOK_ALIKES = [
    "measured\u200b",
    "m\u0435asured",
    "measured\x00",
    "\uff4deasured",
    "MEASURED",
    " measured",
]


@pytest.mark.parametrize("claim", LOOK_ALIKES)
def test_claimed_by_look_alikes_are_refused(hub, seed_record, claim):
    forged = seed_record | {"perf_points": [seed_record["perf_points"][0] | {"claimed_by": claim}]}
    answer = hub.client.post("/api/v1/recipes", json=forged, headers=hub.auth)
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "E_RECIPE_INVALID"
    assert {d.split(":")[0] for d in answer.json()["error"]["details"]} == {
        "perf_points.0.claimed_by"
    }
    assert (
        hub.client.get(f"/api/v1/recipes/{SEED_SLUG}/revisions").json()["revisions"][-1]["no"] == 2
    )
    assert "measured, " not in hub.client.get(f"/r/{SEED_SLUG}").text


def test_hub_owned_point_fields_and_look_alike_enums_are_refused(hub, seed_record):
    point = seed_record["perf_points"][0] | {
        "evidence": "consistent-with-journal",
        "published_by": "alice",
    }
    point["conditions"] = (point.get("conditions") or {}) | {
        "engine": "vl\u043bm",
        "token_count_source": "reported",
    }
    answer = hub.client.post(
        "/api/v1/recipes", json=seed_record | {"perf_points": [point]}, headers=hub.auth
    )
    details = answer.json()["error"]["details"]
    assert answer.status_code == 422
    assert {d.split(":")[0] for d in details} == {
        "perf_points.0.evidence",
        "perf_points.0.published_by",
        "perf_points.0.conditions.engine",
    }
    nfkc = hub.client.post(
        "/api/v1/recipes", json=seed_record | {"tags": ["ﬁne"]}, headers=hub.auth
    )
    assert nfkc.status_code == 422 and "not NFKC-normalised" in nfkc.text


REAL_H200 = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h200" / "result.json"


def test_the_real_h200_run_is_verified_and_its_forgeries_refused(hub):
    """The real H200 result (tests/fixtures/results/h200) (16 requests per level): verified as published; every rate x100, or
    relabelled as two RTX PRO 6000s with its own rig still one H200, refused."""
    real = json.loads(REAL_H200.read_text())
    forged = json.loads(REAL_H200.read_text())
    for point in forged["perf_points"]:
        for key in ("decode_tok_s", "prefill_tok_s", "per_request_decode_tok_s_median"):
            if point.get(key) is not None:
                point[key] *= 100
    details = refused(publish(hub, SMALL_SLUG, BenchResult.model_validate(forged).with_hash()))
    assert {d.split(":")[0] for d in details} >= {f"perf_points.{i}.decode_tok_s" for i in range(3)}
    relabelled = json.loads(REAL_H200.read_text())
    relabelled["conditions"]["recipe_slug"] = SEED_SLUG
    for point in relabelled["perf_points"]:
        point["conditions"] |= {"gpu_count": 2, "card": MAX_Q}
    details = refused(publish(hub, SEED_SLUG, BenchResult.model_validate(relabelled).with_hash()))
    assert "conditions.rig.gpus: the recipe runs on 2 GPU(s); the rig lists 1" in details
    # The file was written before the result model gained fields (their defaults change the hashed
    # body), so its own hash no longer checks out: hashed again, its numbers and requests unchanged.
    answer = publish(hub, SMALL_SLUG, BenchResult.model_validate(real).with_hash())
    assert answer.status_code == 201, answer.text
    assert answer.json()["verified"] == answer.json()["points_added"] == 3
