"""The reproduction as a person reads it: the cells with their intervals, then the verdict table."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from rigbook.bench.repeats import interval_lines
from rigbook.bench.result import load_result
from rigbook.reproduce.verdict import RATE_NAMES
from rigbook.reproduction import Reproduction, VerdictRow

CALL_STYLE = {
    "real difference": "bold yellow",
    "within spread": "green",
    "not comparable": "red",
    "no interval": "dim",
    "not measured": "dim",
    "no claim": "dim",
}


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f}"


def _measured(row: VerdictRow) -> str:
    iv = row.interval
    if row.measured_tok_s is None:
        return "—"
    if iv is None or iv.low is None or iv.high is None:
        return f"{row.measured_tok_s:.1f}"
    return f"{row.measured_tok_s:.1f} [{iv.low:.1f}, {iv.high:.1f}]"


def verdict_table(rep: Reproduction) -> Table:
    """One row per claim: concurrency, rate, claim, measured [95 % CI], ratio, verdict, what differs."""
    table = Table(title=f"{rep.recipe}: claims against this rig", title_justify="left")
    table.add_column("users", justify="right", no_wrap=True)
    table.add_column("rate", no_wrap=True)
    table.add_column("claim", justify="right", no_wrap=True)
    # The interval may wrap below its value on a narrow terminal, so "differs" keeps a column.
    table.add_column("measured [95 % CI]", justify="right")
    table.add_column("ratio", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("differs", overflow="fold", min_width=7)
    for row in rep.rows:
        style = CALL_STYLE[row.call]
        differs = "not comparable" if row.not_comparable else ", ".join(row.differing) or "—"
        table.add_row(
            str(row.concurrency),
            RATE_NAMES.get(row.rate or "", row.rate or "—"),
            _num(row.claim_tok_s),
            _measured(row),
            "—" if row.ratio_pct is None else f"{row.ratio_pct:.1f} %",
            f"[{style}]{row.call}[/]",
            differs,
        )
    return table


def render(rep: Reproduction, console: Console) -> None:
    """Intervals per level, assumptions, the verdict table, the contrast line and the folder."""
    for line in interval_lines(load_result(rep.result)):
        console.print(f"cell {line}", markup=False, highlight=False, soft_wrap=True)
    for line in rep.assumed:
        console.print(f"assumed: {line}", markup=False, highlight=False, soft_wrap=True)
    console.print(verdict_table(rep))
    for row in rep.rows:
        for line in row.not_comparable or row.differs:
            console.print(
                f"  users {row.concurrency}: {line}", markup=False, highlight=False, soft_wrap=True
            )
    console.print(
        "tok/s; rate 'each': one request's decode rate, 'all': the aggregate of all users; "
        "'real difference': the claim lies outside the measured 95 % interval, 'within spread': inside it",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"verdict on the recipe's claims: {rep.verdict}", markup=False, highlight=False)
    console.print(f"result, comparison and report in {rep.folder}", markup=False, highlight=False)
    if rep.contrast:  # last: the seeds' one-line contrast
        console.print(rep.contrast, markup=False, highlight=False, soft_wrap=True)
