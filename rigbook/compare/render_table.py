"""The terminal form of a Comparison: a rich table per pair, then each aspect's verdict with its reasons."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from rigbook.compare.present import (
    ceiling_line,
    columns,
    figure_line,
    missing_notes,
    overall_line,
    reason_lines,
    source_line,
)
from rigbook.compare.quality import quality_section
from rigbook.comparison import Comparison

COLOURS = {"comparable": "green", "comparable with caveats": "yellow", "not comparable": "red"}


def render_table(comparison: Comparison, console: Console) -> None:
    """Print every pair of the comparison."""
    by_name = {s.name: s for s in comparison.sources}
    for pair in comparison.pairs:
        console.print(source_line("A", by_name[pair.a]), highlight=False)
        console.print(source_line("B", by_name[pair.b]), highlight=False)
        if not pair.points and not pair.quality:
            console.print("[red]no points line up[/]", highlight=False)
        elif pair.points:
            cols = columns(pair, compact=True)
            # Two-line headers and a light box: eleven columns of numbers inside 80 characters.
            table = Table(box=box.SIMPLE_HEAD, padding=0, show_edge=False)
            for header, _ in cols:
                split = (
                    header.replace(" of BW ", " of\nBW ")
                    if "BW" in header
                    else header.replace(" ", "\n", 1)
                )
                table.add_column(split, justify="right", no_wrap=True)
            for p in pair.points:
                table.add_row(*(cell(p) for _, cell in cols))
            console.print(table)
            ceilings = ceiling_line(pair)
            if ceilings:
                console.print(f"[dim]{ceilings}[/]", highlight=False)
        for verdict in pair.verdicts:
            colour = COLOURS[verdict.verdict]
            console.print(
                f"[bold]{verdict.title}[/]: [{colour}]{verdict.verdict}[/]", highlight=False
            )
            figure = figure_line(pair, verdict.aspect)
            if figure:
                console.print(f"  {figure}", highlight=False)
            overall = overall_line(verdict)
            if overall:
                console.print(f"  {overall}", highlight=False)
            for mark, text in reason_lines(verdict):
                console.print(f"  {mark} {text}", highlight=False, markup=False)
        quality = quality_section(pair.quality, by_name[pair.a], by_name[pair.b])
        if quality:
            console.print("[bold]quality, like for like[/]", highlight=False)
            for line in quality:
                console.print(f"  {line}", highlight=False, markup=False)
        for note in missing_notes(pair):
            console.print(f"[dim]  {note}[/]", highlight=False)
        for side, labels in (("A", pair.unmatched_a), ("B", pair.unmatched_b)):
            if labels:
                console.print(
                    f"[dim]  {side} points with no partner: {'; '.join(labels)}[/]", highlight=False
                )
        console.print()
