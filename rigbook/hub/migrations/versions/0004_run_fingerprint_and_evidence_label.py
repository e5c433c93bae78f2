"""A run's fingerprint on each result (unique), and the evidence label that says what it proves.

Revision ID: 0004
Revises: 0003

``results.fingerprint`` (:mod:`rigbook.hub.fingerprint`) is computed for every stored result; when
two stored results are one run, the older keeps it and the later ones stay NULL (they were
published before the hub refused replays). ``verified-from-journal`` becomes
``consistent-with-journal`` in every stored record and board row: a journal shows a result is
consistent, not that it is true. A downgrade drops the column and restores the old label.
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

OLD, NEW = "verified-from-journal", "consistent-with-journal"


def _relabel(old: str, new: str) -> None:
    for table, column in (("revisions", "record"), ("board", "entry")):
        op.execute(
            sa.text(f"UPDATE {table} SET {column} = REPLACE({column}, :a, :b)").bindparams(
                a=f'"evidence": "{old}"', b=f'"evidence": "{new}"'
            )
        )
    op.execute(
        sa.text("UPDATE board SET evidence = :b WHERE evidence = :a").bindparams(a=old, b=new)
    )


def upgrade() -> None:
    from rigbook.hub.fingerprint import run_fingerprint

    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("fingerprint", sa.String(80), nullable=True))
    bind = op.get_bind()
    seen: set[str] = set()
    for row in bind.execute(sa.text("SELECT id, body FROM results ORDER BY id")).all():
        body = json.loads(row.body)
        fingerprint = run_fingerprint(body) if isinstance(body, dict) else None
        if fingerprint is None or fingerprint in seen:
            continue
        seen.add(fingerprint)
        bind.execute(
            sa.text("UPDATE results SET fingerprint = :f WHERE id = :i"),
            {"f": fingerprint, "i": row.id},
        )
    op.create_index("ix_results_fingerprint", "results", ["fingerprint"], unique=True)
    _relabel(OLD, NEW)


def downgrade() -> None:
    _relabel(NEW, OLD)
    op.drop_index("ix_results_fingerprint", table_name="results")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("fingerprint")
