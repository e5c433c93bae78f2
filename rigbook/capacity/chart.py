"""`rigbook report` for a capacity result: the curve with its SLO lines and the knee, and a page.

The page sits beside the bench report of the same probes (in ``bench/``), which `rigbook
report` writes as for any bench result.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
from jinja2 import Environment, PackageLoader, select_autoescape
from matplotlib.figure import Figure

from rigbook.bench.report import Written, write_report
from rigbook.capacity.result import CapacityResult
from rigbook.capacity.slo import KINDS


def capacity_figure(result: CapacityResult) -> Figure:
    """Each term's value per probe (filled: passed, x: failed) with its SLO line, on a rate axis
    and a latency axis; aggregate tok/s below; the knee (the answer) as a solid vertical line and
    the first failing level as a dotted one. Every probe is drawn, re-runs included."""
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(7, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    latency = top.twinx()
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    terms = [t for t in result.slo.terms if t.name != "error_rate"]
    for i, term in enumerate(terms):
        ax = top if term.kind.unit == "tok/s" else latency
        colour = colours[i % len(colours)]
        for passed in (True, False):
            pts = [
                (o.concurrency, r.value)
                for o in result.probes
                for r in o.readings
                if r.term == term.name and r.value is not None and r.passed == passed
            ]
            if pts:
                ax.scatter(
                    *zip(*pts, strict=True),
                    color=colour,
                    marker="o" if passed else "x",
                    label=f"{KINDS[term.name].label}" + ("" if passed else " (failed)"),
                )
        ax.axhline(
            term.threshold, color=colour, linestyle="--", linewidth=1, label=f"SLO {term.phrase()}"
        )
    a = result.answer
    knee, fail = a.users, a.first_fail_concurrency
    for ax in (top, bottom):
        if knee:
            ax.axvline(knee, color="black", linewidth=1, alpha=0.6)
        if fail is not None:
            ax.axvline(fail, color="black", linewidth=1, alpha=0.4, linestyle=":")
        ax.grid(alpha=0.3)
    if knee:
        top.annotate(
            f"{'≥ ' if a.lower_bound else ''}{knee} users",
            (knee, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(-3, -12),
            textcoords="offset points",
            ha="right",  # left of the line: the latency axis's labels are on the right
        )
    for ax in (top, latency):  # from zero, so distances to the SLO lines read true
        ax.set_ylim(0, ax.get_ylim()[1])
    top.set_ylabel("per-user tok/s")
    latency.set_ylabel("ms")
    handles = [h for ax in (top, latency) for h in ax.get_legend_handles_labels()[0]]
    labels = [lb for ax in (top, latency) for lb in ax.get_legend_handles_labels()[1]]
    # Above the plot, so it never hides a probe.
    top.legend(
        handles,
        labels,
        fontsize="small",
        loc="lower left",
        bbox_to_anchor=(0, 1.02, 1, 0.2),
        mode="expand",
        ncol=2,
        borderaxespad=0,
    )
    # With no user at the SLO there is no knee to draw: the title says so (a note inside the plot
    # would sit on the one-user probes).
    none = "" if knee else "\nno user met the SLO"
    fig.suptitle(
        f"{result.bench.conditions.model}: users at {result.slo.text}{none}", fontsize="medium"
    )
    levels = sorted({o.concurrency for o in result.probes})
    agg = [
        (o.concurrency, o.aggregate_tok_s) for o in result.probes if o.aggregate_tok_s is not None
    ]
    if agg:
        bottom.scatter(*zip(*agg, strict=True), color=colours[0])
        bottom.set_ylim(0, max(v for _, v in agg) * 1.1)  # from zero, so a flat curve looks flat
    bottom.set_ylabel("aggregate tok/s")
    bottom.set_xlabel("users (concurrent requests)")
    if levels and levels[-1] / levels[0] >= 8:
        bottom.set_xscale("log", base=2)
    bottom.set_xticks(*_tick_labels(levels, bottom.get_xscale() == "log", keep={knee}))
    fig.tight_layout()
    return fig


def _tick_labels(
    levels: list[int], log: bool, keep: set[int | None]
) -> tuple[list[int], list[str]]:
    """A tick for every probed level; a label only where it does not print over the last one
    labelled (the knee always keeps its own)."""
    span = (math.log2(levels[-1] / levels[0]) if log else levels[-1] - levels[0]) or 1.0
    labels, last = [], None
    for c in levels:
        pos = math.log2(c) if log else c
        wide = last is None or (pos - last) / span >= 0.08
        labels.append(str(c) if wide or c in keep else "")
        if labels[-1]:
            last = pos
    return levels, labels


def plot_capacity(result: CapacityResult, path: Path) -> Path:
    """:func:`capacity_figure` written to ``path``."""
    fig = capacity_figure(result)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_capacity_report(result: CapacityResult, out_dir: Path, fmt: str) -> Written:
    """``capacity.png`` and ``report.md``/``report.html`` in ``out_dir``; the probes' bench report
    (its own plots and page) in ``out_dir/bench``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    chart = plot_capacity(result, out_dir / "capacity.png")
    bench = write_report(result.bench, out_dir / "bench", fmt)
    env = Environment(
        loader=PackageLoader("rigbook.capacity", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=False),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["f"] = lambda v, fmt="{:.1f}": "-" if v is None else fmt.format(v)
    page = env.get_template(f"capacity.{fmt}").render(
        r=result,
        c=result.bench.conditions,
        chart=chart.name,
        bench_report=bench.report.relative_to(out_dir).as_posix(),
        kinds=KINDS,
    )
    report = out_dir / f"report.{fmt}"
    report.write_text(page, encoding="utf-8")
    return Written(report=report, plots=[chart, *bench.plots])
