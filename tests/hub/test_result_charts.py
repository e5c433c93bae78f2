"""The recipe page's charts of its published results: the real H200 run published to a real hub app,
the page read through FastAPI's TestClient and in headless Chromium (screenshot kept for a person)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rigbook.bench.curves import curves
from rigbook.bench.result import BenchResult
from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token
from rigbook.hub.result_charts import Published, Shelf, result_charts
from tests.hub.helpers import SMALL_SLUG, live_hub, make_result
from tests.hub.test_pages import ARGS, ARTIFACTS, CHROMIUM

REAL_H200 = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h200" / "result.json"
SEED_SLUG = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"


def h200() -> BenchResult:
    # Hashed again: the file predates fields the result model gained (tests/hub/test_evidence.py).
    return BenchResult.model_validate(json.loads(REAL_H200.read_text())).with_hash()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A hub with the catalog and two results on the small H200 recipe: the real run and one without cells."""
    app = create_app(f"sqlite:///{tmp_path_factory.mktemp('charts') / 'hub.sqlite3'}")
    client = TestClient(app)
    auth = {"Authorization": f"Bearer {create_token(app.state.sessions, 'charts')}"}
    for result in (make_result(), h200()):
        answer = client.post(
            f"/api/v1/recipes/{SMALL_SLUG}/results",
            json=result.model_dump(mode="json"),
            headers=auth,
        )
        assert answer.status_code == 201, answer.text
    yield app
    app.state.engine.dispose()


def test_the_page_draws_both_charts_from_the_published_cells(app):
    page = TestClient(app).get(f"/r/{SMALL_SLUG}").text
    svgs = re.findall(r'<svg class="result-chart".*?</svg>', page, re.S)
    assert len(svgs) == 2
    throughput, ttft = svgs
    name = h200().content_hash.removeprefix("sha256:")[:12]  # type: ignore[union-attr]
    cells = {c.concurrency: c.metrics for c in h200().cells}
    # One labelled point per cell, its tooltip carrying the cell's aggregate (one GPU) and median rate.
    assert re.findall(r">(C=\d+)</text>", throughput) == ["C=1", "C=4", "C=8"]
    for c, m in cells.items():
        assert (
            f"C={c}: {m.aggregate_tok_s:.1f} tok/s per GPU, "
            f"{m.per_request_decode_tok_s.p50:.1f} tok/s per user" in throughput
        )
        assert f"C={c}: TTFT p99 {m.ttft_ms.p99:,.1f} ms" in ttft
    assert f"result {name}" in throughput and f"result {name}" in ttft
    assert "tok/s per GPU (aggregate)" in throughput
    # The result without cells draws nothing and is not in the legend.
    assert page.count("<title>result ") == 3 + 6


def test_a_recipe_without_results_has_no_result_charts(app):
    page = TestClient(app).get(f"/r/{SEED_SLUG}").text
    assert page.count('class="result-chart"') == 0


def test_a_client_bound_cell_is_left_out_and_named():
    result = h200()
    cells = [c.model_copy(update={"client_bound": c.concurrency == 8}) for c in result.cells]
    drawn = curves(result.model_copy(update={"cells": cells}))
    charts = result_charts(Shelf(published=[Published(name="abc (2026-12-03)", curves=drawn)]))
    assert charts is not None
    assert "C=8" not in charts.throughput_svg and "C=8" not in charts.ttft_svg
    assert charts.notes == [
        "result abc (2026-12-03), both charts: left out: C=8 burst (client-bound)"
    ]


def test_no_drawable_cell_means_no_charts():
    assert (
        result_charts(Shelf(published=[Published(name="x", curves=curves(make_result()))])) is None
    )


@pytest.mark.e2e
def test_the_charts_render_in_chromium_under_the_pages_policy(app):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with live_hub(app) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for viewport in ({"width": 1280, "height": 900}, {"width": 390, "height": 844}):
            page = browser.new_page(viewport=viewport)
            page.add_init_script(
                "window.__csp = []; document.addEventListener('securitypolicyviolation', "
                "e => window.__csp.push(e.violatedDirective));"
            )
            page.goto(f"{url}/r/{SMALL_SLUG}")
            charts = page.locator("svg.result-chart")
            assert charts.count() == 2
            for i in range(2):
                box = charts.nth(i).bounding_box()
                assert box and 300 < box["width"] <= viewport["width"] and box["height"] > 150
            assert page.evaluate("window.__csp") == []
            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"] + 1
            page.locator("h3", has_text="Published results").scroll_into_view_if_needed()
            page.screenshot(
                path=str(ARTIFACTS / f"recipe-results-{viewport['width']}.png"), full_page=True
            )
            page.close()
        browser.close()
