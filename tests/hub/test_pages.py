"""The pages in a real headless Chromium: content checked in the rendered page, screenshots kept.

Screenshots go to test-artifacts/hub/ (gitignored) for a person to look at,
at a desktop and a phone viewport.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token
from tests.hub.helpers import SMALL_SLUG, live_hub, make_result

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "hub"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SEED_SLUG = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A hub with the catalog, one published result and a recipe with a <script> title, on uvicorn."""
    app = create_app(f"sqlite:///{tmp_path_factory.mktemp('pages') / 'hub.sqlite3'}")
    client = TestClient(app)
    auth = {"Authorization": f"Bearer {create_token(app.state.sessions, 'pages')}"}
    assert (
        client.post(
            f"/api/v1/recipes/{SMALL_SLUG}/results",
            json=make_result().model_dump(mode="json"),
            headers=auth,
        ).status_code
        == 201
    )
    evil = {
        "slug": "evil",
        "title": "<script>window.pwned=1</script> evil",
        "config": {"launch": ["echo", "<b>x</b>"]},
    }
    assert client.post("/api/v1/recipes", json=evil, headers=auth).status_code == 201
    with live_hub(app) as url:
        yield url
    app.state.engine.dispose()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.e2e
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_recipe_page_shows_measured_points_and_chart(served, browser, viewport):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport=VIEWPORTS[viewport])
    page.goto(f"{served}/r/{SMALL_SLUG}")
    assert "SmolLM2" in page.locator("h1").inner_text()
    assert page.locator("pre.launch").inner_text().strip()
    assert (
        page.locator("svg.chart rect[fill='#0b7a4b']").count() >= 2
    )  # the two measured points (and the legend)
    measured_rows = page.locator("table.points tr.measured-unverified")
    assert measured_rows.count() == 2
    assert "900.3" in measured_rows.nth(1).inner_text() and "900.2539" not in page.content()
    assert "power_limit_w_per_gpu=700.0" in measured_rows.nth(1).inner_text()
    # Nothing overflows the viewport sideways: wide content scrolls inside its own box.
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORTS[viewport]["width"] + 1
    page.screenshot(path=str(ARTIFACTS / f"recipe-{viewport}.png"), full_page=True)

    page.goto(f"{served}/r/{SEED_SLUG}")
    assert page.locator("svg.chart circle").count() >= 3
    assert "claimed" in page.locator("figure.chart-box").inner_text()
    page.screenshot(path=str(ARTIFACTS / f"recipe-claimed-{viewport}.png"), full_page=True)
    page.close()


@pytest.mark.e2e
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_search_leaderboard_and_escaping(served, browser, viewport):
    page = browser.new_page(viewport=VIEWPORTS[viewport])
    page.goto(served + "/")
    page.fill("input[name=q]", "smollm2 h200")
    page.click("button[type=submit]")
    page.wait_for_url("**/?q=*")
    titles = page.locator(".card .title").all_inner_texts()
    assert len(titles) == 1 and "H200" in titles[0]
    page.screenshot(path=str(ARTIFACTS / f"search-{viewport}.png"), full_page=True)

    page.goto(served + "/leaderboard")
    text = page.locator("main").inner_text()
    assert "GLM-5.3-Flash" in text and "900.3" in text and "900.2539" not in text
    page.screenshot(path=str(ARTIFACTS / f"leaderboard-{viewport}.png"), full_page=True)

    page.goto(served + "/r/evil")
    assert page.evaluate("window.pwned") is None
    assert page.locator("h1").inner_text() == "<script>window.pwned=1</script> evil"
    assert page.locator("pre.launch b").count() == 0
    page.close()


@pytest.mark.e2e
def test_pages_satisfy_their_content_security_policy(served, browser):
    """The CSP the hub sends blocks nothing the pages use: no violation, the stylesheet applies, the chart draws."""
    page = browser.new_page()
    page.add_init_script(
        "window.__csp = []; document.addEventListener('securitypolicyviolation', "
        "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    console = []
    page.on("console", lambda message: console.append(message.text))
    for path in (
        "/",
        "/?q=h200",
        f"/r/{SMALL_SLUG}",
        f"/r/{SEED_SLUG}",
        "/leaderboard",
        "/r/evil",
        "/r/nope",
    ):
        answer = page.goto(served + path)
        assert "default-src 'none'" in answer.headers["content-security-policy"], path
        assert page.evaluate("window.__csp") == [], path
        # hub.css sets the header's background: the stylesheet loaded under the policy.
        assert page.evaluate(
            "getComputedStyle(document.querySelector('header.top')).backgroundColor"
        ) == ("rgb(29, 43, 58)"), path
    page.goto(f"{served}/r/{SMALL_SLUG}")
    box = page.locator("svg.chart").bounding_box()
    assert box and box["width"] > 100 and box["height"] > 50
    assert not [m for m in console if "Content Security Policy" in m], console
    page.close()
