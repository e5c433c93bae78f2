"""The board's default pages (`/api/v1/leaderboard.json` and `/leaderboard`, no query string) are
rendered by the write that changes the board, in its transaction, and a worker that does not hold
them sends those bytes: the same bytes and ETag its route renders, never a rendering on the read.
Both workers of `hub serve --workers 2` show them within the bound: tests/hub/test_workers_fresh.py."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import select, text
from starlette.types import Receive, Scope, Send

import rigbook.hub.boards
import rigbook.hub.pages
from rigbook.hub.answers import AnswerLayer
from rigbook.hub.db import writing
from rigbook.hub.leaderboard import board_head, board_version, default_total, rebuild_board
from rigbook.hub.models import PreparedRow
from rigbook.hub.paths import BOARD_HTML, BOARD_JSON
from rigbook.hub.prepared import MADE_BY, OPEN_NEXT
from rigbook.recipe.load import parse_recipe
from tests.hub.helpers import SMALL_SLUG, make_result
from tests.hub.test_answers import counted

BOARDS = (BOARD_JSON, BOARD_HTML)
SAME_HEADERS = ("etag", "content-type", "cache-control", "content-security-policy")


def rendered(hub) -> TestClient:
    """A client of the application behind the answer layer: every read is its route's rendering."""
    layer = hub.app.state.answer_layer
    assert isinstance(layer, AnswerLayer)
    inner = layer.app

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        await inner(scope, receive, send)

    return TestClient(route)


def board_rows(hub) -> dict[str, PreparedRow]:
    with hub.app.state.sessions() as session:
        rows = session.scalars(select(PreparedRow).where(PreparedRow.path.in_(BOARDS))).all()
        return {row.path: row for row in rows}


def version(hub) -> int:
    with hub.app.state.sessions() as session:
        return board_version(session)


def publish(hub, **changes) -> httpx.Response:
    return hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        headers=hub.auth,
        json=make_result(**changes).model_dump(mode="json"),
    )


def many_points(seed_record: dict, slug: str, count: int) -> dict:
    """A recipe of ``count`` claimed decode points: with it the board's first page has a next."""
    points = [
        {"concurrency": c, "decode_tok_s": 10.0 * c, "claimed_by": "author", "context_len": 512}
        for c in range(1, count + 1)
    ]
    return seed_record | {"slug": slug, "perf_points": points}


def test_a_write_prepares_the_default_boards_as_their_routes_render_them(
    make_hub, seed_record, monkeypatch
):
    a = make_hub()
    many = many_points(seed_record, "many-points", 150)
    assert a.client.post("/api/v1/recipes", json=many, headers=a.auth).status_code == 201
    assert publish(a).status_code == 201
    rows = board_rows(a)
    assert set(rows) == set(BOARDS)
    assert {(r.version, r.made_by) for r in rows.values()} == {(version(a), MADE_BY)}
    # The JSON has a next page: its link is the request's, so the row ends before it.
    assert rows[BOARD_JSON].body.endswith(OPEN_NEXT)

    b = make_hub(load_builtin=False)  # holds nothing: its reads are the prepared rows
    reads = [(host, path) for host in ("testserver", "hub.example:8443") for path in BOARDS]
    direct = rendered(b)
    routes = {read: direct.get(read[1], headers={"host": read[0]}) for read in reads}
    for (host, path), route in routes.items():  # the route answers its ETag with a 304
        asked = {"host": host, "if-none-match": route.headers["etag"]}
        assert direct.get(path, headers=asked).status_code == 304

    def never(*_args, **_kwargs):
        raise AssertionError("the board was rendered on a read")

    monkeypatch.setattr(rigbook.hub.boards, "board_ids", never)
    monkeypatch.setattr(rigbook.hub.pages, "board_html", never)
    calls = counted(b, [0.0])
    for (host, path), route in routes.items():
        got = b.client.get(path, headers={"host": host})
        assert calls == [] and got.status_code == route.status_code == 200, (host, path)
        assert got.content == route.content, (host, path)
        assert [got.headers[h] for h in SAME_HEADERS] == [route.headers[h] for h in SAME_HEADERS]
        asked = {"host": host, "if-none-match": got.headers["etag"]}
        assert b.client.get(path, headers=asked).status_code == 304 and calls == []
    page = routes["hub.example:8443", BOARD_JSON].json()
    assert page["total"] > 100 and len(page["items"]) == 100
    assert page["next"] == "http://hub.example:8443/api/v1/leaderboard.json?offset=100&limit=100"
    # Any other page of the board goes on to the application (a worker's board slice).
    monkeypatch.undo()
    calls = counted(b, [0.0])
    for other in (f"{BOARD_JSON}?offset=0", f"{BOARD_HTML}?page=1", f"{BOARD_JSON}?limit=100"):
        assert b.client.get(other).status_code == 200
    assert calls == [BOARD_JSON, BOARD_HTML, BOARD_JSON]


def test_a_board_with_no_next_page_is_prepared_whole(make_hub):
    hub = make_hub()
    assert publish(hub).status_code == 201
    body = board_rows(hub)[BOARD_JSON].body
    assert body.endswith(b'"next":null}')
    assert rendered(hub).get(BOARD_JSON).content == body


def test_a_publish_that_changes_nothing_on_the_board(make_hub):
    """Published again: nothing is written, and the rows stay as they were. A revision the HTML
    board does not show (only the recipe's summary): the HTML keeps its bytes and its ETag (a digest
    of them), so a client's copy stays current; the JSON names the new revision, and its ETag the
    new version, as its route's does."""
    hub = make_hub()
    assert publish(hub).status_code == 201
    before = {p: (r.version, r.etag, r.body) for p, r in board_rows(hub).items()}
    assert publish(hub).status_code == 200  # the same result: a duplicate
    assert {p: (r.version, r.etag, r.body) for p, r in board_rows(hub).items()} == before

    record = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json").json()
    record["summary"] = f"{record.get('summary') or ''} Said again."
    # the hub carries the measured points over; a posted record may not hold them
    record["perf_points"] = [p for p in record["perf_points"] if p["claimed_by"] != "measured"]
    assert hub.client.post("/api/v1/recipes", json=record, headers=hub.auth).status_code == 201
    after = board_rows(hub)
    assert {r.version for r in after.values()} == {before[BOARD_JSON][0] + 1}
    assert (after[BOARD_HTML].etag, after[BOARD_HTML].body) == before[BOARD_HTML][1:]
    assert after[BOARD_JSON].etag != before[BOARD_JSON][1]
    assert rendered(hub).get(BOARD_JSON).headers["etag"] == after[BOARD_JSON].etag


def test_a_board_that_cannot_be_rendered_does_not_stop_the_write(hub):
    """A stored value the board cannot render: the write stands, the board has no prepared rows (the
    ones of the last write are gone), and its routes answer what the failure is, on each read."""
    assert publish(hub).status_code == 201
    assert set(board_rows(hub)) == set(BOARDS)
    with hub.app.state.sessions() as session:
        _, ids = board_head(session, 100)
        slugs = {i: slug for i, slug in session.execute(text("SELECT id, slug FROM board"))}
    broken = next(i for i in ids if slugs[i] != SMALL_SLUG)
    with hub.app.state.engine.begin() as conn:
        conn.execute(text("UPDATE board SET entry = '{}' WHERE id = :id"), {"id": broken})
    assert publish(hub, decode=(123.4, 456.7)).status_code == 201
    assert board_rows(hub) == {}
    assert hub.app.state.prepared.read(f"/r/{SMALL_SLUG}") is not None
    calls = counted(hub, [0.0])
    client = TestClient(hub.app, raise_server_exceptions=False)  # the 500 as a client gets it
    for path in BOARDS:
        answer = client.get(path)
        assert answer.status_code == 500 and answer.json()["error"]["code"] == "E_INTERNAL"
    assert calls == list(BOARDS)


def test_board_rows_of_another_renderer_or_version_are_not_served_and_prepared_at_start(make_hub):
    hub = make_hub()
    with hub.app.state.engine.begin() as conn:
        conn.execute(
            text("UPDATE prepared SET made_by = 'older code' WHERE path = :p"), {"p": BOARD_HTML}
        )
        # a write of code that did not prepare the board (an older hub on this database)
        conn.execute(text("UPDATE hub_state SET value = value + 1 WHERE key = 'board_version'"))
    calls = counted(hub, [0.0])
    assert hub.client.get(BOARD_JSON).status_code == 200
    assert calls == [BOARD_JSON]  # its row is of an older version: the route answered
    with hub.app.state.engine.begin() as conn:  # a migration's change, with no version bump
        conn.execute(
            text(
                "DELETE FROM board WHERE id IN (SELECT min(id) FROM board WHERE metric = 'decode_tok_s')"
            )
        )
    make_hub(load_builtin=False)
    rows = board_rows(hub)
    assert {(r.version, r.made_by) for r in rows.values()} == {(version(hub), MADE_BY)}
    assert rows[BOARD_JSON].body == rendered(hub).get(BOARD_JSON).content  # its total recounted


def test_the_default_boards_total_is_kept_by_each_write_and_counted_when_it_is_not(
    hub, seed_record
):
    """The write reads the default board's total from a count its writes keep (not a count of every
    number); a board written by code that does not keep it is counted whole."""

    def kept_and_counted() -> tuple[int, int]:
        with hub.app.state.sessions() as session:
            counted = session.scalar(
                text("SELECT count(*) FROM board WHERE metric = 'decode_tok_s'")
            )
            return default_total(session), counted

    for count in (30, 10):  # a recipe's numbers added, then some of them taken away
        record = many_points(seed_record, "many-points", count)
        assert hub.client.post("/api/v1/recipes", json=record, headers=hub.auth).status_code == 201
        kept, counted = kept_and_counted()
        assert kept == counted
        assert rendered(hub).get(BOARD_JSON).json()["total"] == counted
    with hub.app.state.engine.begin() as conn:  # a write of code that does not keep the count
        conn.execute(text("DELETE FROM board WHERE slug = 'many-points' AND concurrency > 5"))
        conn.execute(text("UPDATE hub_state SET value = value + 1 WHERE key = 'board_version'"))
    kept, counted = kept_and_counted()
    assert kept == counted
    assert publish(hub).status_code == 201
    kept, counted = kept_and_counted()
    assert kept == counted
    with writing(hub.app.state.sessions) as session:
        rebuild_board(session, [(parse_recipe(record, "many-points"), 3)])
    kept, counted = kept_and_counted()
    assert kept == counted == 10
