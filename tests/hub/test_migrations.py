"""Migrations 0004 and 0005 on a database with results in it, down and up again, on SQLite and
PostgreSQL: the evidence label rewritten both ways, each stored run fingerprinted once."""

from __future__ import annotations

import json

from alembic import command
from alembic.config import Config
from sqlalchemy import text

from rigbook.hub.fingerprint import run_fingerprint
from rigbook.hub.migrate import MIGRATIONS
from tests.hub.helpers import SMALL_SLUG
from tests.hub.test_forgeries import publish, real_h200


def migrate(engine, target: str, *, down: bool = False) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, target)


def test_0004_and_0005_go_down_and_up_with_results_stored(hub):
    assert publish(hub, SMALL_SLUG, real_h200()).status_code == 201
    engine = hub.app.state.engine
    migrate(engine, "0003", down=True)
    with engine.begin() as conn:
        assert (
            conn.execute(
                text("SELECT count(*) FROM board WHERE evidence = 'verified-from-journal'")
            ).scalar_one()
            == 3
        )
        record = conn.execute(
            text("SELECT record FROM revisions WHERE slug = :s ORDER BY no DESC"), {"s": SMALL_SLUG}
        ).first()[0]
        assert '"evidence": "verified-from-journal"' in record
        row = conn.execute(
            text("SELECT slug, revision_no, token_name, created_at, body FROM results")
        ).one()
        # the same run stored again before replays were refused: kept, without a fingerprint
        conn.execute(
            text(
                "INSERT INTO results (slug, content_hash, revision_no, token_name, created_at, body) "
                "VALUES (:slug, :hash, :no, :token, :at, :body)"
            ),
            {
                "slug": row.slug,
                "hash": "sha256:" + "0" * 64,
                "no": row.revision_no,
                "token": row.token_name,
                "at": row.created_at,
                "body": row.body,
            },
        )
    migrate(engine, "head")
    with engine.begin() as conn:
        assert (
            conn.execute(
                text("SELECT count(*) FROM board WHERE evidence = 'consistent-with-journal'")
            ).scalar_one()
            == 3
        )
        prints = conn.execute(text("SELECT fingerprint, key_id FROM results ORDER BY id")).all()
        assert [tuple(p) for p in prints] == [
            (run_fingerprint(json.loads(row.body)), None),
            (None, None),
        ]
    page = hub.client.get(f"/r/{SMALL_SLUG}").text
    assert page.count("measured, consistent with its journal") == 3
