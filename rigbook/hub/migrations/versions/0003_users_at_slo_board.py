"""The users_at_slo board: capacity points ranked per SLO and profile, and off the tok/s board.

Revision ID: 0003
Revises: 0002

No table changes: ``board.scope`` already holds a number's fixed terms. A `rigbook capacity`
point (``users_at_slo``, ``slo``, ``slo_profile``) becomes a ``users_at_slo`` row whose scope is
the canonical SLO and the profile, and is no longer a ``decode_tok_s`` row at the concurrency its
search settled on. The board is rebuilt from the latest revision of every recipe, as 0002 filled
it. A downgrade removes the users_at_slo rows; capacity points return to the tok/s board the next
time their recipe is written.
"""

import json

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from rigbook.hub.leaderboard import rebuild_board
    from rigbook.recipe.load import parse_recipe

    bind = op.get_bind()
    latest = bind.execute(
        sa.text(
            "SELECT v.slug, v.no, v.record FROM revisions v "
            "JOIN recipes r ON r.slug = v.slug AND r.latest_no = v.no"
        )
    )
    recipes = [(parse_recipe(json.loads(row.record), row.slug), row.no) for row in latest]
    with Session(bind=bind) as session:
        rebuild_board(session, recipes)
        session.flush()


def downgrade() -> None:
    op.execute("DELETE FROM board WHERE metric = 'users_at_slo'")
