"""`rigbook key create|show|register|list|revoke|rotate`: the signing key results are published with."""

from __future__ import annotations

import typer

from rigbook.cli.output import JsonOption, console, emit, handled

key_app = typer.Typer(
    help="Your signing key: results you publish are signed with it.", no_args_is_help=True
)

HubOption = typer.Option(..., "--hub", help="The hub's base URL, e.g. http://127.0.0.1:8080.")
TokenOption = typer.Option(
    None, "--token", envvar="RIGBOOK_HUB_TOKEN", help="API token (`rigbook hub token create`)."
)


def _say(text: str) -> None:
    console.print(text, highlight=False, markup=False)


@key_app.command("create")
def create(
    force: bool = typer.Option(False, "--force", help="Replace the key that is there."),
    as_json: bool = JsonOption,
) -> None:
    """Create an ed25519 key pair under RIGBOOK_HOME/keys (the private key readable by you only)."""
    with handled(as_json):
        from rigbook.hub.signing import create_key

        made = create_key(force=force)
        emit(made, as_json, lambda: _say(f"created {made.key_id} at {made.path}"))


@key_app.command("show")
def show(as_json: bool = JsonOption) -> None:
    """Print your key's id and public key."""
    with handled(as_json):
        from rigbook.hub.signing import local_key

        mine = local_key()
        emit(mine, as_json, lambda: _say(f"{mine.key_id} {mine.public_key} ({mine.path})"))


@key_app.command("register")
def register_cmd(
    hub: str = HubOption, token: str = TokenOption, as_json: bool = JsonOption
) -> None:
    """Register your public key to your token on a hub, so it verifies the results you sign."""
    with handled(as_json):
        from rigbook.hub.client import HubClient
        from rigbook.hub.signing import local_key

        done = HubClient(hub, token).register_key(local_key().public_key)
        emit(done, as_json, lambda: _say(f"registered {done['key_id']} to {done['token']}"))


@key_app.command("list")
def list_cmd(hub: str = HubOption, token: str = TokenOption, as_json: bool = JsonOption) -> None:
    """The keys registered to your token on a hub."""
    with handled(as_json):
        from rigbook.hub.client import HubClient

        keys = HubClient(hub, token).list_keys()

        def show_keys() -> None:
            for k in keys:
                state = f"revoked {k['revoked_at']}" if k["revoked_at"] else "active"
                _say(f"{k['key_id']}  {state}  registered {k['created_at']}")

        emit(keys, as_json, show_keys)


@key_app.command("revoke")
def revoke(
    key_id: str = typer.Argument(..., help="The key's id (ed25519:…)."),
    hub: str = HubOption,
    token: str = TokenOption,
    as_json: bool = JsonOption,
) -> None:
    """Revoke a key of your token on a hub: it signs nothing more there; the points it signed stay,
    marked."""
    with handled(as_json):
        from rigbook.hub.client import HubClient

        done = HubClient(hub, token).revoke_key(key_id)
        emit(
            done,
            as_json,
            lambda: _say(
                f"revoked {done['key_id']} at {done['revoked_at']}; "
                f"{done['points_marked']} published point(s) marked"
            ),
        )


@key_app.command("rotate")
def rotate(hub: str = HubOption, token: str = TokenOption, as_json: bool = JsonOption) -> None:
    """Replace your key: create a new one, register it on the hub, then revoke the old one there."""
    with handled(as_json):
        from rigbook.hub.client import HubClient
        from rigbook.hub.signing import create_key, local_key

        client = HubClient(hub, token)
        old = local_key()
        new = create_key(force=True)
        registered = client.register_key(new.public_key)
        revoked = client.revoke_key(old.key_id)
        done = {"new": registered, "revoked": revoked}
        emit(
            done,
            as_json,
            lambda: _say(
                f"new key {new.key_id} registered; {old.key_id} revoked "
                f"({revoked['points_marked']} published point(s) marked)"
            ),
        )


def register(app: typer.Typer) -> None:
    """Add `rigbook key …` to the main app."""
    app.add_typer(key_app, name="key")
