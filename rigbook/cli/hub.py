"""`rigbook hub serve|init|token create` and `rigbook publish`: thin wrappers over rigbook.hub."""

from __future__ import annotations

import typer

from rigbook.cli.output import JsonOption, console, emit, handled

hub_app = typer.Typer(help="Run a recipe hub: API, pages and leaderboard.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens for writes to the hub.", no_args_is_help=True)
hub_app.add_typer(token_app, name="token")

DbOption = typer.Option(None, "--db", help="Database URL: sqlite:///PATH or postgresql+psycopg://USER@HOST/DB "
                        "(default: RIGBOOK_HOME/hub.sqlite3).")


@hub_app.command("serve")
def serve(
    db: str = DbOption,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: str = typer.Option("8080", "--port", help="Port to listen on, 1-65535."),
    max_body: int = typer.Option(1024 * 1024, "--max-body", min=1, help="Largest request body accepted, bytes."),
    rate_limit: int = typer.Option(60, "--rate-limit", min=1, help="Writes per minute allowed per token."),
) -> None:
    """Serve the hub (migrating the database and loading the built-in catalog first)."""
    with handled():
        import uvicorn

        from rigbook.hub.app import create_app
        from rigbook.hub.serve import check_port
        from rigbook.ports import parse_port

        port = parse_port(port)
        check_port(host, port)
        app = create_app(db, max_body=max_body, rate=(rate_limit, 60.0))
        console.print(f"rigbook hub on http://{host}:{port}/  (API: /api/v1/recipes, schema: /openapi.json)", highlight=False)
        uvicorn.run(app, host=host, port=port, log_level="info")


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
        emit({"db": url, "loaded": loaded}, as_json,
             lambda: console.print(f"database ready: {url}; built-in recipes loaded: {len(loaded)}", highlight=False))


@token_app.command("create")
def token_create(name: str = typer.Argument(..., help="Who or what the token is for."), db: str = DbOption,
                 as_json: bool = JsonOption) -> None:
    """Make an API token; it is shown once and stored only as its SHA-256."""
    with handled(as_json):
        from rigbook.hub.auth import create_token
        from rigbook.hub.db import make_engine, session_factory
        from rigbook.hub.migrate import upgrade

        engine = make_engine(db)
        upgrade(engine)
        token = create_token(session_factory(engine), name)

        def render() -> None:
            print(token)
            console.print("  shown once: keep it; pass it with --token or RIGBOOK_HUB_TOKEN", style="dim")

        emit({"name": name, "token": token}, as_json, render)


def publish(
    file: str = typer.Argument(..., help="A recipe .json or a bench result file."),
    hub: str = typer.Option(..., "--hub", help="The hub's base URL, e.g. http://127.0.0.1:8080."),
    token: str = typer.Option(None, "--token", envvar="RIGBOOK_HUB_TOKEN", help="API token (`rigbook hub token create`)."),
    recipe: str = typer.Option(None, "--recipe", help="For a result: the recipe slug, when its conditions name none."),
    as_json: bool = JsonOption,
) -> None:
    """Publish a recipe (a new revision) or a bench result (measured points) to a hub."""
    with handled(as_json):
        from rigbook.hub.publish import publish_file

        done = publish_file(file, hub, token, recipe=recipe)

        def show() -> None:
            what = f"{done.points_added} measured point(s)" if done.kind == "result" else "recipe"
            note = " (already published: nothing added)" if done.duplicate else ""
            console.print(f"published {what} to {done.slug} revision {done.revision}{note}: {done.url}", highlight=False)

        emit(done, as_json, show)


def register(app: typer.Typer) -> None:
    """Add `rigbook hub …` and `rigbook publish` to the main app."""
    app.add_typer(hub_app, name="hub")
    app.command("publish")(publish)
