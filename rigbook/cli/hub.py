"""`rigbook hub serve|init|token create|list|revoke` and `rigbook publish`: thin wrappers over rigbook.hub."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import typer

from rigbook.cli.output import JsonOption, console, emit, err_console, handled

if TYPE_CHECKING:  # the models load with the command, not with the CLI
    from pathlib import Path

    from rigbook.reproduction import Reproduction

hub_app = typer.Typer(help="Run a recipe hub: API, pages and leaderboard.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens for writes to the hub.", no_args_is_help=True)
hub_app.add_typer(token_app, name="token")

DbOption = typer.Option(
    None,
    "--db",
    help="Database URL: sqlite:///PATH or postgresql+psycopg://USER@HOST/DB "
    "(default: RIGBOOK_HOME/hub.sqlite3).",
)


@hub_app.command("serve")
def serve(
    db: str = DbOption,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: str = typer.Option("8080", "--port", help="Port to listen on, 1-65535."),
    workers: int = typer.Option(
        os.cpu_count() or 1,
        "--workers",
        min=1,
        max=256,
        help="Worker processes (default: one per core).",
    ),
    max_body: int = typer.Option(
        1024 * 1024, "--max-body", min=1, help="Largest request body accepted, bytes."
    ),
    rate_limit: int = typer.Option(
        60, "--rate-limit", min=0, help="Writes per minute per token (0: no limit)."
    ),
    auth_limit: int = typer.Option(
        30,
        "--auth-limit",
        min=0,
        help="Failed authentications per minute per address (0: no limit).",
    ),
    read_limit: int = typer.Option(
        0, "--read-limit", min=0, help="Reads per minute per address (0, the default: no limit)."
    ),
    forwarded_allow_ips: str = typer.Option(
        None,
        "--forwarded-allow-ips",
        help="Proxies whose X-Forwarded-For names the client (comma-separated).",
    ),
) -> None:
    """Serve the hub (migrating the database and loading the built-in catalog first)."""
    with handled():
        from rigbook.hub.rates import Limits, Rate
        from rigbook.hub.serve import ServeSettings
        from rigbook.hub.serve import serve as run_hub
        from rigbook.ports import parse_port

        listen_port = parse_port(port)
        assert listen_port is not None  # a given string parses to a port or raises E_INPUT
        limits = Limits(
            writes_per_token=Rate(limit=rate_limit),
            auth_failures_per_address=Rate(limit=auth_limit),
            reads_per_address=Rate(limit=read_limit),
        )
        run_hub(
            ServeSettings(db=db, max_body=max_body, limits=limits),
            host=host,
            port=listen_port,
            workers=workers,
            forwarded_allow_ips=forwarded_allow_ips,
            announce=lambda: console.print(
                f"rigbook hub on http://{host}:{port}/ with {workers} worker(s)  "
                "(API: /api/v1/recipes, schema: /openapi.json)",
                highlight=False,
            ),
        )


@hub_app.command("init")
def init(db: str = DbOption, as_json: bool = JsonOption) -> None:
    """Create or migrate the database and load the built-in catalog (safe to run again)."""
    with handled(as_json):
        from rigbook.hub.db import make_engine, session_factory
        from rigbook.hub.migrate import upgrade
        from rigbook.hub.repository import load_catalog

        engine = make_engine(db)
        upgrade(engine)
        loaded = load_catalog(session_factory(engine))
        url = engine.url.render_as_string(hide_password=True)
        emit(
            {"db": url, "loaded": loaded},
            as_json,
            lambda: console.print(
                f"database ready: {url}; built-in recipes loaded: {len(loaded)}", highlight=False
            ),
        )


def _sessions(db: str | None):
    from rigbook.hub.db import make_engine, session_factory
    from rigbook.hub.migrate import upgrade

    engine = make_engine(db)
    upgrade(engine)
    return session_factory(engine)


@token_app.command("create")
def token_create(
    name: str = typer.Argument(..., help="Who or what the token is for."),
    db: str = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Make an API token. Only the token goes to stdout (`TOK=$(rigbook hub token create ci)`); it is shown
    once and stored only as its SHA-256."""
    with handled(as_json):
        from rigbook.hub.auth import create_token

        token = create_token(_sessions(db), name)

        def show() -> None:
            print(token)
            err_console.print(
                "shown once: keep it; pass it with --token or RIGBOOK_HUB_TOKEN", style="dim"
            )

        emit({"name": name, "token": token}, as_json, show)


@token_app.command("list")
def token_list(db: str = DbOption, as_json: bool = JsonOption) -> None:
    """Every token's name, creation and revocation time (never the token)."""
    with handled(as_json):
        from rigbook.hub.auth import list_tokens

        tokens = list_tokens(_sessions(db))

        def show() -> None:
            for t in tokens:
                state = f"revoked {t.revoked_at}" if t.revoked_at else "active"
                console.print(
                    f"{t.name}  created {t.created_at}  {state}", highlight=False, markup=False
                )

        emit([t.model_dump() for t in tokens], as_json, show)


@token_app.command("revoke")
def token_revoke(
    name: str = typer.Argument(..., help="The token's name (`token list`)."),
    db: str = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Revoke a token: every worker refuses its next write."""
    with handled(as_json):
        from rigbook.hub.auth import revoke_token

        done = revoke_token(_sessions(db), name)
        emit(
            done.model_dump(),
            as_json,
            lambda: console.print(
                f"revoked {done.name} at {done.revoked_at}", highlight=False, markup=False
            ),
        )


def publish(
    file: str = typer.Argument(
        ...,
        help="A recipe .json, a bench result, a capacity result, or the reproduction.json "
        "`rigbook reproduce` wrote.",
    ),
    hub: str = typer.Option(..., "--hub", help="The hub's base URL, e.g. http://127.0.0.1:8080."),
    token: str = typer.Option(
        None, "--token", envvar="RIGBOOK_HUB_TOKEN", help="API token (`rigbook hub token create`)."
    ),
    recipe: str = typer.Option(
        None,
        "--recipe",
        help="For a bench or capacity result: the recipe slug, when its conditions name none.",
    ),
    sign: bool = typer.Option(
        True,
        "--sign/--no-sign",
        help="Sign a result with the key under RIGBOOK_HOME when there is one (`rigbook key create`).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Publish a recipe (a new revision), a bench result (measured points) or a capacity result
    (its users_at_slo point) to a hub; a result is signed when you have a key."""
    with handled(as_json):
        from rigbook.hub.publish import publish_document, publish_loaded
        from rigbook.reproduction import Reproduction
        from rigbook.result_file import read_file
        from rigbook.results import is_result, validate

        document = read_file(file)
        if not is_result(document):  # a recipe
            done = publish_document(document, hub, token, recipe=recipe, signing=sign)
        elif isinstance((loaded := validate(document)).result, Reproduction):
            _publish_reproduction(loaded.result, loaded.path.parent, hub, token, sign, as_json)
            return
        else:
            done = publish_loaded(loaded, hub, token, recipe=recipe, signing=sign)

        def show() -> None:
            what = {
                "result": f"{done.points_added} measured point(s)",
                "capacity": f"{done.points_added} users_at_slo point(s)",
            }.get(done.kind, "recipe")
            if done.verified:
                what += f", {done.verified} consistent with its journal"
            if done.signed_by:
                what += f", signed by {done.signed_by}"
            note = " (already published: nothing added)" if done.duplicate else ""
            console.print(
                f"published {what} to {done.slug} revision {done.revision}{note}: {done.url}",
                highlight=False,
            )

        emit(done, as_json, show)


def _publish_reproduction(
    rep: Reproduction, folder: Path, hub: str, token: str | None, sign: bool, as_json: bool
):
    """The folder `rigbook reproduce` left: its result, then its verdict (rigbook.reproduce.publish)."""
    from rigbook.reproduce.publish import publish_reproduction

    done = publish_reproduction(rep, hub, token, folder=folder, signing=sign)
    signed = f", signed by {done.signed_by}" if done.signed_by else ""
    again = " (already published: nothing added)" if done.duplicate else ""
    emit(
        done,
        as_json,
        lambda: console.print(
            f"published a reproduction ({done.verdict}) of {done.slug} revision "
            f"{done.reproduced_revision} with its result, in revision {done.revision}"
            f"{signed}{again}: {done.url}",
            highlight=False,
        ),
    )


def register(app: typer.Typer) -> None:
    """Add `rigbook hub …` and `rigbook publish` to the main app."""
    app.add_typer(hub_app, name="hub")
    app.command("publish")(publish)
