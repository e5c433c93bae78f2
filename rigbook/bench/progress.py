"""Live progress while a bench runs, and the final table, with rich (on stderr, so --json stays clean)."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from rigbook.bench.result import BenchResult
from rigbook.bench.speculation import summary
from rigbook.bench.workers import Ceiling
from rigbook.findings import Finding

_err = Console(stderr=True)


def _f(v: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def _n(v: float | None) -> str:
    """A rate or latency in few characters: whole numbers from 100 up."""
    if v is None:
        return "-"
    v = round(v, 1)  # 99.96 is "100", not "100.0"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}"


class LiveProgress:
    """A progress bar per cell; ``update`` is the runner's progress callback."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[note]}"),
            console=_err,
            transient=False,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            self._p.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._p.stop()

    def update(self, event: str, data: dict) -> None:
        if not self.enabled:
            return
        if event == "cell":
            label = f"concurrency {data['concurrency']}"
            self._task = self._p.add_task(label, total=data["total"], note="")
        elif event == "request" and self._task is not None:
            rec = data["record"]
            note = (
                f"{_f(rec.decode_tok_s)} tok/s" if rec.ok else f"[red]{(rec.error or '')[:40]}[/]"
            )
            self._p.update(self._task, advance=1, note=note)
        elif event == "cell_done" and self._task is not None:
            cell = data["cell"]
            state = "valid" if cell.valid else "[red]invalid[/]"
            self._p.update(
                self._task, note=f"{_f(cell.metrics.aggregate_tok_s)} tok/s aggregate, {state}"
            )


# Status words short enough for the table to fit 80 columns whatever the status; the legend
# under the table spells them out.
STATUS_LEGEND = {
    "valid": "valid",
    "invalid": "failed requests",
    "client": "client_bound: the client may have set the pace",
    "cut": "cut short by a signal",
    "count": "W_SERVER_COUNT",
}


# Token-count sources in five characters: where the counts came from.
_SOURCE_WORDS = {
    "server_continuous": "usage",
    "server_final": "final",
    "client_length": "len",
    "client_fallback": "chunk",
}


def cell_status(cell) -> str:
    """One short status word per cell, the worst first."""
    if cell.cut_short:
        return "cut"
    if not cell.valid:
        return "invalid"
    if cell.client_bound:
        return "client"
    if cell.server is not None and cell.server.mismatch:
        return "count"
    return "valid"


def result_table(result: BenchResult) -> Table:
    """One row per cell: the numbers, failed requests, where token counts came from and whether the
    cell counts (the failure reasons follow in the E_BENCH_INVALID error)."""
    c0 = result.conditions
    # Two-line headers, a light box, one-word statuses and no energy column without energy keep the
    # table inside 80 characters.
    t = Table(
        title=f"{c0.model} @ {c0.url} — {c0.mode}, profile {c0.profile.name} v{c0.profile.version}; "
        "times in ms",
        box=box.SIMPLE_HEAD,
        padding=(0, 0, 0, 1),
        pad_edge=False,
    )
    energy = any(c.telemetry.energy_j_per_token is not None for c in result.cells)
    columns = [
        "C",
        "agg\ntok/s",
        "req\np50",
        "req\np10",
        "req\np90",
        "TTFT\np50",
        "TTFT\np99",
        "ITL",
        "fail",
        "count",
        *(["J/tok"] if energy else []),
        "status",
    ]
    for col in columns:
        t.add_column(col, justify="left" if col in ("count", "status") else "right", no_wrap=True)
    for c in result.cells:
        m = c.metrics
        status = cell_status(c)
        t.add_row(
            str(c.concurrency),
            _n(m.aggregate_tok_s),
            _n(m.per_request_decode_tok_s.p50),
            _n(m.per_request_decode_tok_s.p10),
            _n(m.per_request_decode_tok_s.p90),
            _n(m.ttft_ms.p50),
            _n(m.ttft_ms.p99),
            _n(m.itl_ms.p50),
            str(m.requests_failed),
            _SOURCE_WORDS.get(c.token_count_source or "", "-"),
            *([_f(c.telemetry.energy_j_per_token, "{:.2f}")] if energy else []),
            status if status == "valid" else f"[red]{status}[/]",
        )
    return t


def status_legend(result: BenchResult) -> list[str]:
    """The meaning of each status word the table shows, other than valid."""
    shown = sorted({cell_status(c) for c in result.cells} - {"valid"})
    return [f"{word}: {STATUS_LEGEND[word]}" for word in shown]


def ceiling_line(top: Ceiling | None) -> str | None:
    """The client's ceiling of one process and of the worker processes the run used."""
    if top is None:
        return None
    line = (
        f"client ceiling: one process {top.one_process_tok_s:,.0f} tok/s (10⁶ ÷ "
        f"{top.cpu_us_per_token:.1f} µs CPU per token at concurrency {top.concurrency})"
    )
    if top.workers > 1:
        line += f"; {top.workers} worker processes {top.workers_tok_s:,.0f} tok/s"
    return line


def warning_markup(w: Finding) -> str:
    """A warning as the terminal shows it, ``warning[CODE]: message``, in rich markup."""
    return f"[yellow]warning[{w.code}][/]: {escape(w.message)}"


def render_result(result: BenchResult, path: Path, top: Ceiling | None) -> None:
    """The final table, the warnings and the path, on stderr; the path alone on stdout.
    ``top`` is the client's ceiling, computed once with the measurement."""
    _err.print(result_table(result))
    for line in status_legend(result):
        _err.print(line, highlight=False)
    for c in result.cells:
        if c.speculation is not None:
            _err.print(f"speculation, C={c.concurrency}: {summary(c.speculation)}", highlight=False)
    client = ceiling_line(top)
    if client:
        _err.print(client, highlight=False)
    for w in result.warnings:
        _err.print(warning_markup(w), highlight=False)
    if not result.telemetry.available:
        _err.print(f"telemetry: unavailable ({result.telemetry.reason})", highlight=False)
    print(path)
