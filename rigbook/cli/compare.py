"""`rigbook compare`: line up perf points of bench results, recipe files or catalog slugs, and judge each pair."""

from __future__ import annotations

import typer

from rigbook.cli.output import JsonOption, console, emit, handled, write_text
from rigbook.compare import compare_refs
from rigbook.compare.render_md import render_md
from rigbook.compare.render_table import render_table
from rigbook.errors import InputError

FORMATS = ("table", "md")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""

    @app.command("compare")
    def compare(
        refs: list[str] = typer.Argument(
            ...,
            metavar="SOURCE",
            help="Two or more: bench result files, recipe files or URLs, catalog slugs (A B [C ...]).",
        ),
        as_json: bool = JsonOption,
        fmt: str = typer.Option("table", "--format", help="table (terminal) or md (Markdown)."),
    ) -> None:
        """Compare perf numbers like with like: a verdict per pair for raw throughput, power efficiency and scaling, with every reason."""
        with handled(as_json):
            if fmt not in FORMATS:
                raise InputError(
                    "E_INPUT", f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}"
                )
            comparison = compare_refs(refs)
            if fmt == "md" and not as_json:
                write_text(render_md(comparison))
                return
            emit(comparison, as_json, lambda: render_table(comparison, console))
