"""`rigbook codes`: the registry of finding and error codes."""

from __future__ import annotations

import typer
from rich.table import Table

from rigbook.cli.output import JsonOption, console, emit
from rigbook.codes import CODES, codes_markdown


def codes(
    fmt: str = typer.Option("table", "--format", help="table or md."),
    as_json: bool = JsonOption,
) -> None:
    """List every code with its severity, meaning and remedy."""
    if fmt == "md" and not as_json:
        print(codes_markdown(), end="")
        return

    def render() -> None:
        table = Table("code", "severity", "meaning", "remedy", title=f"{len(CODES)} codes")
        for c in CODES.values():
            table.add_row(c.code, c.severity.value, c.meaning, c.remedy)
        console.print(table)

    emit(list(CODES.values()), as_json, render)


def register(app: typer.Typer) -> None:
    """Add `rigbook codes` to the main app."""
    app.command("codes")(codes)
