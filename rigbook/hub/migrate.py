"""Create or upgrade the hub database with Alembic, without an alembic.ini."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from rigbook.errors import EnvironmentProblem

MIGRATIONS = Path(__file__).parent / "migrations"


def upgrade(engine: Engine) -> None:
    """Bring the database to the newest schema (a no-op when it is there); failures raise E_DB."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except SQLAlchemyError as exc:
        raise EnvironmentProblem(
            "E_DB",
            f"cannot migrate {engine.url.render_as_string(hide_password=True)}: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
        ) from None
