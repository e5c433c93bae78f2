"""`rigbook reproduce --publish` of the embedded recipe against the real llama-server, to a real hub on
loopback: the reproduction shows on the recipe's page and in its JSON; a refused publish loses nothing,
and `rigbook publish FOLDER/reproduction.json` sends the folder again (to a PostgreSQL hub too: one
engine run serves both databases)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token
from rigbook.recipe import EMBEDDED_SLUG
from tests.conftest import free_port
from tests.hub.conftest import GENEROUS
from tests.hub.helpers import live_hub
from tests.launch.helpers import rigbook
from tests.reproduce.test_llama_e2e import QUICK, gone


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_reproduce_publish_shows_on_the_recipe_page_and_json(pg_server, tmp_path: Path) -> None:
    app = create_app(f"sqlite:///{tmp_path / 'hub.sqlite3'}", limits=GENEROUS)
    token = create_token(app.state.sessions, "reproducer")
    port, out = free_port(), tmp_path / "rep"
    try:
        with live_hub(app) as url:
            done = rigbook(
                "reproduce",
                EMBEDDED_SLUG,
                "--yes",
                "--port",
                str(port),
                "--out",
                str(out),
                *QUICK,
                "--publish",
                "--hub",
                url,
                env={"RIGBOOK_HUB_TOKEN": token},
                timeout=900,
            )
            assert done.returncode == 0, done.stderr + done.stdout
            assert gone(port)
            assert "claims against this rig" in done.stdout
            assert "published: inconclusive, reproduction of revision 1" in " ".join(
                done.stdout.split()
            ), done.stdout

            record = httpx.get(f"{url}/api/v1/recipes/{EMBEDDED_SLUG}.json").json()
            (entry,) = record["reproductions"]
            assert entry["verdict"] == "inconclusive"  # the embedded recipe claims nothing
            assert entry["reproduced_revision"] == 1
            assert entry["card"].startswith("CPU") and entry["gpu_count"] == 0
            assert [p["concurrency"] for p in entry["points"]] == [1, 2]
            assert all(p["call"] == "no claim" for p in entry["points"])
            # The hub shows the interval the run computed: none for a level with fewer than two
            # repeats that count (a repeat whose client the machine descheduled does not).
            local = json.loads((out / "reproduction.json").read_text())
            assert [p["low"] for p in entry["points"]] == [
                (row["interval"] or {}).get("low") for row in local["rows"]
            ]
            result = json.loads((out / "result.json").read_text())
            dropped = {
                c["concurrency"] for c in result["cells"] if c["client_bound"] or not c["valid"]
            }
            assert all(p["low"] is not None or p["concurrency"] in dropped for p in entry["points"])
            assert entry["evidence"]["result"] == result["content_hash"]
            evidence = httpx.get(url + entry["evidence"]["href"])
            assert evidence.json()["content_hash"] == result["content_hash"]

            page = httpx.get(f"{url}/r/{EMBEDDED_SLUG}").text
            assert f"reproduced on {entry['card']}: inconclusive" in page
            assert f'href="{entry["evidence"]["href"]}"' in page

            # A refused publish keeps the folder and says how to send it again.
            again = rigbook(
                "publish",
                str(out / "reproduction.json"),
                "--hub",
                url,
                "--token",
                "not-a-real-token",
                "--json",
            )
            assert again.returncode == 2, again.stderr
            error = json.loads(again.stdout)["error"]
            assert error["code"] == "E_AUTH" and "nothing is lost" in error["message"]
            assert f"rigbook publish {out / 'reproduction.json'}" in error["remedy"]
            assert (out / "result.json").is_file() and (out / "report" / "report.md").is_file()
            sent = rigbook(
                "publish", str(out / "reproduction.json"), "--hub", url, "--token", token, "--json"
            )
            assert sent.returncode == 0, sent.stderr
            assert json.loads(sent.stdout)["duplicate"] is True
    finally:
        app.state.engine.dispose()
    shown_on(pg_server.new_database(), out, entry)


def shown_on(db_url: str, out: Path, entry: dict) -> None:
    """The folder published with `rigbook publish` to a fresh hub on ``db_url`` shows as ``entry`` did."""
    app = create_app(db_url, limits=GENEROUS)
    token = create_token(app.state.sessions, "reproducer")
    try:
        with live_hub(app) as url:
            sent = rigbook(
                "publish", str(out / "reproduction.json"), "--hub", url, "--token", token, "--json"
            )
            assert sent.returncode == 0, sent.stderr
            assert json.loads(sent.stdout)["verdict"] == "inconclusive"
            record = httpx.get(f"{url}/api/v1/recipes/{EMBEDDED_SLUG}.json").json()
            (there,) = record["reproductions"]
            assert there["points"] == entry["points"]
            page = httpx.get(f"{url}/r/{EMBEDDED_SLUG}").text
            assert f"reproduced on {entry['card']}: inconclusive" in page
    finally:
        app.state.engine.dispose()
