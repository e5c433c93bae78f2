"""`rigbook report`: PNG plots and a Markdown or HTML page for one result."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
from jinja2 import Environment, PackageLoader, select_autoescape

from rigbook.bench.curves import curves, left_out_note
from rigbook.bench.plots import plot_throughput, plot_ttft
from rigbook.bench.repeats import interval_lines
from rigbook.bench.result import BenchResult
from rigbook.bench.workloads.plots import has_turns, plot_turns
from rigbook.bench.workloads.trace_chart import plot_schedule_lag

# What each chart shows, as its alt text and caption (docs/report.md has the longer story).
CAPTIONS = {
    "rates.png": "aggregate and per-request median tok/s against concurrency",
    "distribution.png": "each request's decode rate, one strip per cell",
    "throughput.png": "throughput {unit} against tok/s per user, each point labelled with its concurrency",
    "ttft.png": "TTFT p50 and p99 against concurrency",
    "turns.png": "session workloads: TTFT p50 by turn per cell, and the prefix-cache hit rate "
    "by concurrency",
    "schedule-lag.png": "trace replay: each request's schedule lag against its planned time",
}


@dataclass
class Written:
    report: Path
    plots: list[Path]


def _gaps(values: list[float | None]) -> list[float]:
    """An unknown figure as NaN, which matplotlib draws as a gap in the line."""
    return [math.nan if v is None else v for v in values]


def _plot_rates(result: BenchResult, path: Path) -> Path:
    """Aggregate and per-request median tok/s against concurrency, valid cells only."""
    cells = sorted((c for c in result.cells if c.valid), key=lambda c: c.concurrency)
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [c.concurrency for c in cells]
    ax.plot(xs, _gaps([c.metrics.aggregate_tok_s for c in cells]), "o-", label="aggregate tok/s")
    ax.plot(
        xs,
        _gaps([c.metrics.per_request_decode_tok_s.p50 for c in cells]),
        "s--",
        label="per-request median tok/s",
    )
    ax.set_xlabel("concurrency")
    ax.set_ylabel("tokens / s")
    ax.set_xticks(xs or [1])
    ax.set_title(f"{result.conditions.model}: decode rate")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _plot_distribution(result: BenchResult, path: Path) -> Path:
    """Per-request decode rates, one strip per cell, so spread and outliers show."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for c in result.cells:
        rates = [r.decode_tok_s for r in c.requests if r.ok and r.decode_tok_s is not None]
        ax.scatter(
            [c.concurrency] * len(rates),
            rates,
            alpha=0.6,
            label=f"C={c.concurrency}" + ("" if c.valid else " (invalid)"),
        )
    ax.set_xlabel("concurrency")
    ax.set_ylabel("per-request decode tok/s")
    ax.set_title("per-request rate distribution")
    ax.grid(alpha=0.3)
    if result.cells:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_report(result: BenchResult, out_dir: Path, fmt: str) -> Written:
    """Write ``rates.png``, ``distribution.png``, ``throughput.png``, ``ttft.png`` (and, for a
    session workload, ``turns.png``) and ``report.md`` or ``report.html`` into ``out_dir``
    (docs/report.md says what each chart shows)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn = curves(result)
    model = result.conditions.model
    plots = [
        _plot_rates(result, out_dir / "rates.png"),
        _plot_distribution(result, out_dir / "distribution.png"),
        plot_throughput(drawn, model, out_dir / "throughput.png"),
        plot_ttft(drawn, model, out_dir / "ttft.png"),
    ]
    if has_turns(result):
        plots.append(plot_turns(result, out_dir / "turns.png"))
    plots += [
        plot_schedule_lag(c.trace, out_dir / "schedule-lag.png") for c in result.cells if c.trace
    ]
    env = Environment(
        loader=PackageLoader("rigbook.bench", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=False),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["f"] = lambda v, fmt="{:.1f}": "-" if v is None else fmt.format(v)
    captions = {p.name: CAPTIONS[p.name].format(unit=drawn.unit) for p in plots}
    # Said in words too, so a reader of the page (not only of the PNG) sees which cells are missing.
    notes = [
        f"{chart} chart: {note}"
        for chart, note in (
            ("throughput", drawn.scale_note()),
            ("throughput", left_out_note(drawn.throughput_left_out)),
            ("TTFT", left_out_note(drawn.ttft_left_out)),
        )
        if note is not None
    ] + [f"95 % confidence interval at {line}" for line in interval_lines(result)]
    page = env.get_template(f"report.{fmt}").render(r=result, captions=captions, notes=notes)
    report = out_dir / f"report.{fmt}"
    report.write_text(page, encoding="utf-8")
    return Written(report=report, plots=plots)
