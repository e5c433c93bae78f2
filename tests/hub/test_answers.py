"""The answer layer: a read answered since the last write is sent again before the framework, the
same bytes and headers, and every write is seen within the version interval (at once by its writer)."""

from __future__ import annotations

from sqlalchemy import text
from starlette.types import Receive, Scope, Send

import rigbook.hub.boards
import rigbook.hub.pages
import rigbook.hub.repository
from rigbook.hub.answers import AnswerLayer
from rigbook.hub.freshness import VersionGate
from rigbook.hub.rates import Limits, Rate
from tests.hub.helpers import SMALL_SLUG, make_result

READS = (
    f"/api/v1/recipes/{SMALL_SLUG}.json",
    f"/r/{SMALL_SLUG}",
    "/api/v1/leaderboard.json?limit=2&offset=1",
    "/leaderboard?page=1",
)


def counted(hub, now: list[float]) -> list[str]:
    """Paths that reach the application behind the layer; the hub's version read on a scripted clock."""
    hub.app.state.version = VersionGate(hub.app.state.sessions, 0.1, clock=lambda: now[0])
    layer = hub.app.state.answer_layer
    assert isinstance(layer, AnswerLayer)
    inner, calls = layer.app, []

    async def counting(scope: Scope, receive: Receive, send: Send) -> None:
        calls.append(scope["path"])
        await inner(scope, receive, send)

    layer.app = counting
    return calls


def test_a_held_answer_is_the_applications_own_sent_again_without_it(hub):
    now = [0.0]
    calls = counted(hub, now)
    for path in READS:
        first = hub.client.get(path)
        assert first.status_code == 200
        calls.clear()
        again = hub.client.get(path)
        assert calls == [], path
        assert again.content == first.content
        assert again.headers.items() == first.headers.items()
        assert "content-security-policy" in again.headers


def test_a_held_answer_answers_its_etag_with_304(hub):
    now = [0.0]
    calls = counted(hub, now)
    for path in READS[0], READS[2]:
        etag = hub.client.get(path).headers["etag"]
        calls.clear()
        same = hub.client.get(path, headers={"if-none-match": f'"other", {etag}'})
        assert calls == [] and same.status_code == 304 and same.content == b""
        assert same.headers["etag"] == etag and same.headers["cache-control"]
        assert "content-type" not in same.headers and "x-frame-options" in same.headers
        other = hub.client.get(path, headers={"if-none-match": '"other"'})
        assert calls == [] and other.status_code == 200


def test_a_write_elsewhere_shows_within_the_interval_and_its_writer_sees_it_at_once(make_hub):
    a, b = make_hub(), make_hub(load_builtin=False)
    now = [0.0]
    calls = counted(a, now)
    recipe = a.client.get(READS[0])
    page = a.client.get(READS[1]).text
    written = b.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        headers=b.auth,
        json=make_result().model_dump(mode="json"),
    )
    assert written.status_code == 201
    now[0] += 0.05  # within the interval: a's held answers, the staleness docs/hub.md states
    calls.clear()
    assert a.client.get(READS[0]).content == recipe.content and calls == []
    now[0] += 0.05  # past it: the write shows, from the bytes the write prepared
    fresh = a.client.get(READS[0])
    assert calls == [] and fresh.headers["etag"] != recipe.headers["etag"]
    assert "900.3" in a.client.get(READS[1]).text and "900.3" not in page
    calls.clear()
    assert a.client.get(READS[0]).content == fresh.content and calls == []  # held again
    # a's own write: its next read goes on at once, inside the interval
    again = a.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        headers=a.auth,
        json=make_result(decode=(123.4, 456.7)).model_dump(mode="json"),
    )
    assert again.status_code == 201
    calls.clear()
    mine = a.client.get(READS[0])
    assert calls == [] and mine.headers["etag"] != fresh.headers["etag"]


def test_what_is_never_held(make_hub):
    hub = make_hub()
    now = [0.0]
    calls = counted(hub, now)
    revisions = f"/api/v1/recipes/{SMALL_SLUG}/revisions"
    for _ in range(2):
        assert hub.client.get("/r/no-such-recipe").status_code == 404
        assert hub.client.head(READS[0]).status_code == 200
        assert hub.client.get(revisions).status_code == 200  # not one of the versioned reads
    assert calls == ["/r/no-such-recipe", READS[0], revisions] * 2
    # the board's `next` link names the host asked: one answer per host
    calls.clear()
    one = hub.client.get(READS[2]).json()["next"]
    two = hub.client.get(READS[2], headers={"host": "hub.example"}).json()["next"]
    assert calls == [READS[2].split("?")[0]] * 2 and one != two and "hub.example" in two
    # with a per-address read limit every read is counted, so every read goes on
    limited = make_hub(limits=Limits(reads_per_address=Rate(limit=1000)))
    calls = counted(limited, now)
    for _ in range(2):
        limited.client.get(READS[0])
    assert calls == [READS[0]] * 2


def test_a_version_the_database_cannot_give_is_E_DB_from_the_application(make_hub):
    hub = make_hub()
    with hub.app.state.engine.begin() as conn:
        conn.execute(text("DROP TABLE hub_state"))
    answer = hub.client.get(READS[2])
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "E_DB"


def test_a_read_no_worker_holds_is_the_prepared_bytes_never_a_rendering(make_hub, monkeypatch):
    """A worker that has not answered a recipe's JSON or page since the last write sends the bytes
    the write prepared: one indexed read, with no rendering and no route."""
    a, b = make_hub(), make_hub(load_builtin=False)
    sent = {path: a.client.get(path) for path in READS[:2]}

    def never(*_args, **_kwargs):
        raise AssertionError("rendered on a read")

    monkeypatch.setattr(rigbook.hub.pages, "recipe_html", never)
    monkeypatch.setattr(rigbook.hub.repository, "get_record_text", never)
    calls = counted(b, [0.0])
    for path, first in sent.items():
        again = b.client.get(path)
        assert calls == [], path
        assert again.content == first.content
        assert again.headers.items() == first.headers.items()
        same = b.client.get(path, headers={"if-none-match": first.headers["etag"]})
        assert same.status_code == 304


def test_a_page_that_cannot_be_prepared_does_not_stop_its_write(hub, monkeypatch):
    """The write stands; the page has no prepared bytes, and its route renders it on each read."""
    real = rigbook.hub.pages.recipe_html

    def broken(*_args, **_kwargs):
        raise OverflowError("a stored value out of range")

    monkeypatch.setattr(rigbook.hub.pages, "recipe_html", broken)
    written = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        headers=hub.auth,
        json=make_result().model_dump(mode="json"),
    )
    assert written.status_code == 201
    assert hub.app.state.prepared.read(f"/r/{SMALL_SLUG}") is None
    assert hub.app.state.prepared.read(READS[0]) is not None
    monkeypatch.setattr(rigbook.hub.pages, "recipe_html", real)
    calls = counted(hub, [0.0])
    page = hub.client.get(READS[1])
    assert page.status_code == 200 and "900.3" in page.text and calls == [READS[1]]


def test_every_offset_of_a_board_is_a_slice_of_one_read(hub, monkeypatch):
    """One query per board and write version; its pages, deep ones included, are slices of it."""
    reads = []
    real = rigbook.hub.boards.board_ids

    def counting(session, filters):
        reads.append(filters.model_dump_json())
        return real(session, filters)

    monkeypatch.setattr(rigbook.hub.boards, "board_ids", counting)
    whole = hub.client.get("/api/v1/leaderboard.json", params={"limit": 500}).json()
    assert whole["total"] > 3
    pages = [
        hub.client.get("/api/v1/leaderboard.json", params={"limit": 2, "offset": offset}).json()
        for offset in range(0, whole["total"], 2)
    ]
    assert [i for p in pages for i in p["items"]] == whole["items"]
    assert len(reads) == 1


def test_a_slug_the_hub_cannot_hold_is_not_looked_up(hub):
    """No prepared read for it (PostgreSQL refuses a NUL in a parameter: that was a 503)."""
    for path in ("/r/a%00b", "/api/v1/recipes/a%00b.json", "/r/UPPER", "/r/a%2Fb"):
        assert hub.client.get(path).status_code == 404, path


def test_a_board_whose_rows_a_write_replaced_mid_read_is_read_again_not_cut_short(hub, monkeypatch):
    """The ids and their rows are two reads; a write between them drops rows the ids name. The page
    reads the board again and answers it whole, not short with a total that counts the lost rows."""
    whole = hub.client.get("/api/v1/leaderboard.json", params={"limit": 500}).json()
    real, calls = rigbook.hub.boards.board_items, []

    def replaced_once(session, ids):
        calls.append(list(ids))
        items = real(session, ids)
        return items[1:] if len(calls) == 1 else items

    monkeypatch.setattr(rigbook.hub.boards, "board_items", replaced_once)
    again = hub.client.get("/api/v1/leaderboard.json", params={"limit": 500, "offset": 0})
    assert again.status_code == 200 and len(calls) == 2
    assert again.json()["items"] == whole["items"] and again.json()["total"] == whole["total"]


def test_a_board_that_moves_under_every_read_is_a_retryable_503(hub, monkeypatch):
    real = rigbook.hub.boards.board_items
    monkeypatch.setattr(rigbook.hub.boards, "board_items", lambda s, ids: real(s, ids)[1:])
    moving = hub.client.get("/api/v1/leaderboard.json", params={"limit": 7, "offset": 1})
    assert moving.status_code == 503 and moving.json()["error"]["code"] == "E_DB", moving.text
