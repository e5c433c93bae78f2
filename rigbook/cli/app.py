"""The `rigbook` command: one module per command group, each adds itself here."""

from __future__ import annotations

import typer

from rigbook import __version__
from rigbook.cli import (
    agree,
    bench,
    capacity,
    check,
    codes,
    compare,
    hub,
    key,
    launch,
    needle,
    recipes,
    reproduce,
    rig,
)
from rigbook.cli.output import run_main

app = typer.Typer(
    name="rigbook",
    help="Check, launch, verify, measure, compare and publish LLM serving recipes on your own GPUs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for module in (
    recipes,
    rig,
    check,
    launch,
    bench,
    capacity,
    needle,
    agree,
    compare,
    reproduce,
    hub,
    key,
    codes,
):
    module.register(app)


@app.command("version")
def version() -> None:
    """Print rigbook's version."""
    print(__version__)


def main() -> None:
    """Console-script entry point."""
    run_main(app)
