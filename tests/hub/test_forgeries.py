"""The forgeries of issue 40, each against a hub on SQLite and PostgreSQL: refused, or labelled for what
the hub can check ("consistent with its journal", never "verified").

The journal forgeries start from the real H200 run (a copy in tests/fixtures/results/h200) and are rebuilt and hashed
again with rigbook's own code, as an attacker would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from rigbook.bench.assemble import perf_point
from rigbook.bench.result import BenchResult
from rigbook.hub.evidence import rebuild_cell
from rigbook.hub.models import ResultRow
from rigbook.hub.repository import now_text, touch
from tests.hub.helpers import SMALL_SLUG, make_result, point_conditions

REAL_H200 = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h200" / "result.json"
CPU_SLUG = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"
SEED_SLUG = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"
MAX_Q = "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"
TWIN_SLUG = "smollm2-135m-on-one-h200-again"


def publish(hub, slug: str, result: BenchResult | dict):
    body = result if isinstance(result, dict) else json.loads(result.model_dump_json())
    return hub.client.post(f"/api/v1/recipes/{slug}/results", json=body, headers=hub.auth)


def refused(answer) -> list[str]:
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "E_RESULT_REFUSED"
    return answer.json()["error"]["details"]


def replayed(answer) -> None:
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "E_RESULT_REPLAYED"


def real_h200() -> BenchResult:
    # Written before the result model gained fields: hashed again, numbers and requests unchanged.
    return BenchResult.model_validate_json(REAL_H200.read_text()).with_hash()


def scaled(result: BenchResult, factor: float, *, energy_too: bool = False) -> BenchResult:
    """Every request's timings divided by ``factor`` (so every rate is x ``factor``), each cell and
    point rebuilt with the bench's own code, hashed again."""

    def times(value: float | None, origin: float) -> float | None:
        return None if value is None else origin + (value - origin) / factor

    cells = []
    for cell in result.cells:
        origin = min(r.sent_s for r in cell.requests)
        records = []
        for r in cell.requests:
            itl = r.itl_ms.model_copy(
                update={
                    k: (v / factor if isinstance(v, float) else v)
                    for k, v in r.itl_ms.model_dump().items()
                    if k != "n"
                }
            )
            records.append(
                r.model_copy(
                    update={
                        "sent_s": times(r.sent_s, origin),
                        "first_token_s": times(r.first_token_s, origin),
                        "first_content_s": times(r.first_content_s, origin),
                        "last_token_s": times(r.last_token_s, origin),
                        "done_s": times(r.done_s, origin),
                        "decode_tok_s": r.decode_tok_s * factor if r.decode_tok_s else None,
                        "itl_ms_mean": r.itl_ms_mean / factor if r.itl_ms_mean else None,
                        "itl_ms": itl,
                    }
                )
            )
        telemetry = cell.telemetry
        if energy_too and telemetry.energy_j_total is not None:
            telemetry = telemetry.model_copy(
                update={"energy_j_total": telemetry.energy_j_total / factor}
            )
        forged = cell.model_copy(
            update={
                "requests": records,
                "duration_s": cell.duration_s / factor if cell.duration_s else None,
                "telemetry": telemetry,
            }
        )
        cells.append(rebuild_cell(forged))
    points = [
        perf_point(cell, result.conditions, {"quant": point.conditions.quant})
        for point, cell in zip(result.perf_points, cells, strict=True)
        if point.conditions is not None
    ]
    return result.model_copy(update={"cells": cells, "perf_points": points}).with_hash()


def test_the_real_run_is_consistent_with_its_journal_and_labelled_so(hub):
    answer = publish(hub, SMALL_SLUG, real_h200())
    assert answer.status_code == 201, answer.text
    assert answer.json()["verified"] == 3
    board = hub.client.get("/api/v1/leaderboard.json", params={"recipe": SMALL_SLUG}).json()
    assert {e["evidence"] for e in board["items"] if e["evidence"] != "claimed"} == {
        "consistent-with-journal"
    }
    page = hub.client.get(f"/r/{SMALL_SLUG}").text
    assert page.count("measured, consistent with its journal") == 3
    assert "verified" not in page.lower()


@pytest.mark.parametrize("factor", [100.0, 178.0])
def test_a_scaled_journal_draws_more_power_than_its_rig_allows(hub, factor):
    details = refused(publish(hub, SMALL_SLUG, scaled(real_h200(), factor)))
    assert any(
        d.startswith("cells.0.telemetry.energy_j_total:")
        and "the rig's enforced limits allow 700 W" in d
        for d in details
    ), details


def test_a_journal_scaled_x1_5_no_longer_adds_up_to_its_power_samples(hub):
    details = refused(publish(hub, SMALL_SLUG, scaled(real_h200(), 1.5)))
    assert any("but its power samples average" in d for d in details), details


def test_a_scaled_journal_of_a_published_run_is_that_run_again(hub):
    assert publish(hub, SMALL_SLUG, real_h200()).status_code == 201
    replayed(publish(hub, SMALL_SLUG, scaled(real_h200(), 1.5, energy_too=True)))


def test_a_cpu_run_is_bounded_by_host_memory_bandwidth(hub):
    cpu = make_result(
        CPU_SLUG,
        decode=(1_000_000.0,),
        conditions=point_conditions(gpu_count=0, card=None, power_limit_w_per_gpu=None),
        gpu_names=(),
    )
    details = refused(publish(hub, CPU_SLUG, cpu))
    assert any(
        d.startswith("perf_points.0.decode_tok_s:") and "host memory bandwidth ceiling" in d
        for d in details
    ), details


def _twin(hub, seed_record) -> None:
    """A second recipe on the same model and card, for a run to be published on twice."""
    record = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()
    twin = {k: v for k, v in record.items() if k not in ("revision", "links", "speeds")}
    twin |= {"slug": TWIN_SLUG, "title": "the same run, again", "perf_points": []}
    assert hub.client.post("/api/v1/recipes", json=twin, headers=hub.auth).status_code == 201


@pytest.mark.parametrize("slug_in_result", [TWIN_SLUG, None])
def test_one_run_counts_on_one_recipe(hub, seed_record, slug_in_result):
    _twin(hub, seed_record)
    run = make_result()
    assert publish(hub, SMALL_SLUG, run).status_code == 201
    moved = run.model_copy(
        update={"conditions": run.conditions.model_copy(update={"recipe_slug": slug_in_result})}
    ).with_hash()
    replayed(publish(hub, TWIN_SLUG, moved))
    assert publish(hub, SMALL_SLUG, run).json()["duplicate"] is True


def test_a_replay_with_its_start_moved_a_day_is_refused(hub):
    run = make_result()
    assert publish(hub, SMALL_SLUG, run).status_code == 201
    later = run.model_copy(
        update={
            "conditions": run.conditions.model_copy(update={"started_at": "2026-10-22T10:00:00Z"})
        }
    ).with_hash()
    replayed(publish(hub, SMALL_SLUG, later))


def test_a_replay_with_one_request_nudged_a_nanosecond_is_refused(hub):
    real = real_h200()
    assert publish(hub, SMALL_SLUG, real).status_code == 201
    cell = real.cells[0]
    nudged = [cell.requests[0].model_copy(update={"done_s": cell.requests[0].done_s + 1e-9})]
    cells = [cell.model_copy(update={"requests": nudged + cell.requests[1:]}), *real.cells[1:]]
    replayed(publish(hub, SMALL_SLUG, real.model_copy(update={"cells": cells}).with_hash()))


def test_power_outside_the_rig_or_the_card_is_refused(hub):
    details = refused(
        publish(
            hub, SMALL_SLUG, make_result(conditions=point_conditions(power_limit_w_per_gpu=150.0))
        )
    )
    assert (
        "perf_points.0.conditions.power_limit_w_per_gpu: 150 W, but the rig enforced 700 W"
        in details
    )
    huge = make_result(conditions=point_conditions(power_limit_w_per_gpu=1e9), power=1e9)
    details = refused(publish(hub, SMALL_SLUG, huge))
    assert any(
        d.startswith("conditions.rig.gpus.0.power_enforced_limit_w: 1e+09 W is outside")
        for d in details
    ), details


def test_zero_energy_per_token_is_refused(hub):
    details = refused(
        publish(hub, SMALL_SLUG, make_result(conditions=point_conditions(energy_j_per_token=0.0)))
    )
    assert "perf_points.0.conditions.energy_j_per_token: must be above zero; got 0.0" in details


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        (
            {"reply_tokens": 4000},
            "perf_points.0.conditions.reply_tokens: 4000, but the run's profile asked for 400",
        ),
        (
            {"sampling": {"temperature": 0.7, "top_p": 1.0}},
            "perf_points.0.conditions.sampling.temperature: 0.7, but the run's profile used 0",
        ),
    ],
)
def test_conditions_that_contradict_the_run_are_refused(hub, changes, line):
    details = refused(publish(hub, SMALL_SLUG, make_result(conditions=point_conditions(**changes))))
    assert line in details


def test_journal_backed_conditions_that_contradict_the_journal_are_refused(hub):
    forged = json.loads(real_h200().model_dump_json())
    forged["conditions"]["profile"]["max_tokens"] = 4000
    for point in forged["perf_points"]:
        point["conditions"]["reply_tokens"] = 4000
    forged["perf_points"][0]["conditions"]["sampling"]["temperature"] = 0.7
    details = refused(publish(hub, SMALL_SLUG, BenchResult.model_validate(forged).with_hash()))
    assert (
        "perf_points.0.conditions.sampling.temperature: 0.7, but the run's profile used 0"
        in details
    )
    assert any(
        d.startswith("perf_points.0.conditions.sampling.temperature: claims 0.7") for d in details
    ), details


@pytest.mark.parametrize(
    ("started", "finished", "line"),
    [
        (
            "2099-01-01T00:00:00Z",
            None,
            "conditions.started_at: 2099-01-01T00:00:00+00:00 is in the future",
        ),
        (
            "2026-10-21T10:00:00Z",
            "2026-10-21T09:00:00Z",
            "conditions.finished_at: 2026-10-21T09:00:00+00:00 is before the start (2026-10-21T10:00:00+00:00)",
        ),
    ],
)
def test_times_out_of_order_or_in_the_future_are_refused(hub, started, finished, line):
    run = make_result()
    run = run.model_copy(
        update={
            "conditions": run.conditions.model_copy(
                update={"started_at": started, "finished_at": finished}
            )
        }
    ).with_hash()
    assert line in refused(publish(hub, SMALL_SLUG, run))


def test_one_gpu_listed_twice_is_refused(hub):
    run = make_result(
        SEED_SLUG,
        decode=(150.0,),
        model="glm-5.3-flash",
        gpu_names=(MAX_Q, MAX_Q),
        power=300.0,
        conditions=point_conditions(
            gpu_count=2,
            card=MAX_Q,
            engine="vllm",
            quant="nvfp4-csf-mxfp8-attn-qad",
            power_limit_w_per_gpu=300.0,
        ),
    )
    rig = run.conditions.rig.model_copy(
        update={
            "gpus": [g.model_copy(update={"uuid": "GPU-same"}) for g in run.conditions.rig.gpus]
        }
    )
    twice = run.model_copy(
        update={"conditions": run.conditions.model_copy(update={"rig": rig})}
    ).with_hash()
    assert "conditions.rig.gpus: one GPU UUID is listed more than once" in refused(
        publish(hub, SEED_SLUG, twice)
    )


def test_impossible_rates_without_a_journal_are_refused(hub):
    huge = make_result(decode=(1e9,)).model_copy()
    huge.perf_points[0] = huge.perf_points[0].model_copy(
        update={"concurrency": 1_000_000, "per_request_decode_tok_s_median": None}
    )
    details = refused(publish(hub, SMALL_SLUG, huge.with_hash()))
    assert any("compute ceiling of 1 x H200" in d for d in details), details
    tiny = refused(publish(hub, SMALL_SLUG, make_result(decode=(1e-300,))))
    assert any(d.startswith("perf_points.0.decode_tok_s: 1e-300 tok/s is below") for d in tiny)
    eagle = make_result(
        decode=(5_000_000.0,), conditions=point_conditions(speculative_method="eagle3")
    )
    details = refused(publish(hub, SMALL_SLUG, eagle))
    assert any("tokens per speculative step" in d for d in details), details


@pytest.mark.parametrize(
    "text",
    [
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": -Infinity}',
        '{"a": 1e400}',
    ],
)
def test_non_finite_numbers_are_invalid_input(hub, text):
    body = json.loads(make_result().model_dump_json())
    raw = json.dumps(body).replace(
        '"decode_tok_s": 321.46', text[1:-1].replace('"a"', '"decode_tok_s"')
    )
    answer = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        content=raw,
        headers=hub.auth | {"content-type": "application/json"},
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "E_RESULT_REFUSED"


def test_a_duplicate_key_is_invalid_input(hub):
    real = make_result()
    forged = make_result(decode=(32146.0, 900.2539))
    text = json.dumps(json.loads(real.model_dump_json()))
    points = json.dumps(json.loads(forged.model_dump_json())["perf_points"])
    # the x100 copy first, then the real points: a parser keeping the last would store the real ones
    doubled = text.replace('"perf_points": ', f'"perf_points": {points}, "perf_points": ', 1)
    answer = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        content=doubled,
        headers=hub.auth | {"content-type": "application/json"},
    )
    assert answer.status_code == 422, answer.text
    assert "appears twice" in answer.json()["error"]["message"]


def test_a_stored_value_cannot_stop_a_page_from_rendering(hub):
    """A result stored before the hub bounded TTFT, with a TTFT near a double's limit (written here
    past the checks): its chart's axis arithmetic overflowed, and the page answered 500. The page
    is the one its write prepared, and the one the route renders when none was."""
    assert publish(hub, SMALL_SLUG, real_h200()).status_code == 201
    real = json.loads(real_h200().model_dump_json())
    for cell in real["cells"]:
        for key in ("p50", "p99", "max", "mean"):
            cell["metrics"]["ttft_ms"][key] = 1.7e308
    with hub.app.state.sessions() as session, session.begin():
        session.add(
            ResultRow(
                slug=SMALL_SLUG,
                content_hash="sha256:" + "f" * 64,
                revision_no=1,
                token_name="old",
                created_at=now_text(),
                body=json.dumps(real),
            )
        )
        touch(session, SMALL_SLUG)  # its page is prepared again, as a write's would be
    page = hub.client.get(f"/r/{SMALL_SLUG}")
    assert page.status_code == 200, page.text
    assert "a number out of drawing range; not drawn" in page.text
    with hub.app.state.sessions() as session:
        assert session.scalars(select(ResultRow.slug)).all() == [SMALL_SLUG] * 2
