"""Concurrent writes to one recipe, through a real uvicorn server, on SQLite and PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.hub.helpers import SMALL_SLUG, live_hub, make_result

THREADS = 8


def test_concurrent_revisions_never_lose_or_repeat_a_number(hub, seed_record):
    slug = seed_record["slug"]
    with live_hub(hub.app) as url:

        def post(i: int) -> httpx.Response:
            if i % 4 == 3:  # results write revisions of another recipe through the same path
                body = make_result(decode=(100.0 + i,)).model_dump(mode="json")
                return httpx.post(
                    f"{url}/api/v1/recipes/{SMALL_SLUG}/results",
                    json=body,
                    headers=hub.auth,
                    timeout=60,
                )
            return httpx.post(
                f"{url}/api/v1/recipes",
                json=seed_record | {"title": f"variant {i}"},
                headers=hub.auth,
                timeout=60,
            )

        with ThreadPoolExecutor(THREADS * 2) as pool:
            answers = list(pool.map(post, range(THREADS * 2)))
        assert [a.status_code for a in answers] == [201] * (THREADS * 2), [
            a.text for a in answers if a.status_code != 201
        ]
        history = httpx.get(f"{url}/api/v1/recipes/{slug}/revisions").json()["revisions"]
        small = httpx.get(f"{url}/api/v1/recipes/{SMALL_SLUG}.json").json()

    numbers = [r["no"] for r in history]
    assert numbers == list(
        range(2, 2 + 1 + 12)
    )  # the catalog's revision 2, then 12 posted ones, no gaps
    posted = sorted(a.json()["revision"]["no"] for a in answers if "title" in a.json())
    assert posted == list(range(3, 15))
    # Every result's point survived: none was written over by a concurrent revision.
    measured = sorted(
        p["decode_tok_s"] for p in small["perf_points"] if p["claimed_by"] == "measured"
    )
    assert measured == [100.0 + i for i in range(THREADS * 2) if i % 4 == 3]
    assert small["revision"]["no"] == 1 + 4
