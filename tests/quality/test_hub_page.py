"""The hub's recipe page shows quality points with their evidence (the seed's prose claims)."""

from __future__ import annotations

import html

from fastapi.testclient import TestClient

from rigbook.hub.app import create_app

SEED_SLUG = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"


def test_recipe_page_lists_the_seed_quality_claims(tmp_path):
    app = create_app(f"sqlite:///{tmp_path / 'hub.sqlite3'}")
    try:
        page = TestClient(app).get(f"/r/{SEED_SLUG}")
        assert page.status_code == 200
        text = html.unescape(page.text)
        quality = text.split("<h2>Quality</h2>", 1)[1]
        assert "needle, context 1048576" in quality
        assert (
            "1/1 probes passed at 1,040,355 prompt tokens" in quality and "TTFT=249.0 s" in quality
        )
        assert "notes: Salted-needle retrieval pass at 1,040,355-token prompt" in quality
        assert "multiple choice, MMLU-Pro vs TP4" in quality and "168/200 right (84.0%)" in quality
        assert "McNemar p=1.0" in quality and "82.6% (1000q)" in quality
        # The needle claim is a quality point, no longer a row of the speed table.
        speed = text.split("<h2>Speed</h2>", 1)[1].split("<h2>Quality</h2>", 1)[0]
        assert "Salted-needle" not in speed
    finally:
        app.state.engine.dispose()
