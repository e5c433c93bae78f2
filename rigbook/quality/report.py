"""`rigbook report` for needle and agree results: a picture and a Markdown or HTML page.

A needle result draws the depth × context grid: one cell per (context, depth), green where the
cold probe retrieved every fact, red where not, grey where the server cut the prompt, with the
facts found and the TTFT written in it. An agree result draws the 2 × 2 table of right and wrong answers McNemar reads.
"""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt

from rigbook.bench.report import Written
from rigbook.quality.result import AgreeResult, NeedleResult, QualityResult


def _needle_grid(result: NeedleResult, path: Path) -> Path:
    c = result.conditions
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(c.depths), 1.2 + 0.8 * len(c.contexts)))
    for row, ctx in enumerate(c.contexts):
        for col, depth in enumerate(c.depths):
            p = next(
                (p for p in result.probes if (p.context, p.depth, p.cache) == (ctx, depth, "cold")),
                None,
            )
            colour = (
                "#dddddd" if p is None or p.truncated else ("#7fc97f" if p.passed else "#f0776b")
            )
            ax.add_patch(plt.Rectangle((col, row), 1, 1, facecolor=colour, edgecolor="white", lw=2))
            if p is not None:
                ttft = f"\n{p.ttft_ms / 1000:.2f} s" if p.ttft_ms is not None else ""
                found = "cut" if p.truncated else f"{sum(f.found for f in p.facts)}/{len(p.facts)}"
                ax.text(
                    col + 0.5,
                    row + 0.5,
                    f"{found}{ttft}",
                    ha="center",
                    va="center",
                    fontsize=9,
                )
    ax.set_xlim(0, len(c.depths))
    ax.set_ylim(0, len(c.contexts))
    ax.set_xticks([i + 0.5 for i in range(len(c.depths))], [f"{d:g}" for d in c.depths])
    ax.set_yticks([i + 0.5 for i in range(len(c.contexts))], [f"{x:,}" for x in c.contexts])
    ax.set_xlabel("depth of the facts (0 = start of the prompt)")
    ax.set_ylabel("context (tokens)")
    ax.set_title(f"{c.endpoint.model}: facts found, cold TTFT", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _agree_table(result: AgreeResult, path: Path) -> Path:
    s = result.summary
    assert s is not None, "called only with a summary"
    both = sum(bool(o.a.correct and o.b.correct) for o in result.questions if not o.failed)
    neither = sum(
        o.a.correct is False and o.b.correct is False for o in result.questions if not o.failed
    )
    cells = [[both, s.only_a_correct or 0], [s.only_b_correct or 0, neither]]
    fig, ax = plt.subplots(figsize=(4.5, 3.6))
    ax.imshow(cells, cmap="Blues")
    for i in range(2):
        for j in range(2):
            ax.text(j, i, str(cells[i][j]), ha="center", va="center", fontsize=14)
    ax.set_xticks([0, 1], ["B right", "B wrong"])
    ax.set_yticks([0, 1], ["A right", "A wrong"])
    p = "—" if s.mcnemar_p is None else f"{s.mcnemar_p:.3g}"
    ax.set_title(f"{result.conditions.suite.name}: exact McNemar p = {p}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _lines(result: QualityResult) -> list[str]:
    """The page's content as Markdown lines."""
    if isinstance(result, NeedleResult):
        c = result.conditions
        out = [
            f"# needle: {c.endpoint.model}",
            "",
            f"- engine: {c.endpoint.engine} {c.endpoint.engine_version or ''} at {c.endpoint.url}",
            f"- recipe: {c.endpoint.recipe or '—'}; served context {c.served_context} "
            f"({c.served_context_source})",
            f"- {c.facts} salted facts per probe, seed {c.seed}, {c.haystack}; sized by "
            f"{c.token_count_source}",
            f"- load {c.run.machine.load_start} → {c.run.machine.load_end} "
            f"on {c.run.machine.cpus} CPUs",
            "",
            "| context | depth | cache | found | faults | prompt tokens | TTFT ms | prefill tok/s |",
            "|---:|---:|---|---:|---|---:|---:|---:|",
        ]
        for p in result.probes:
            faults = "prompt cut" if p.truncated else ", ".join(p.faults) or "—"
            out.append(
                f"| {p.context} | {p.depth:g} | {p.cache} | {sum(f.found for f in p.facts)}/"
                f"{len(p.facts)} | {faults} | {p.prompt_tokens} | {p.ttft_ms or 0:.0f} | "
                f"{p.prefill_tok_s or 0:.0f} |"
            )
        return out
    s, ac = result.summary, result.conditions
    assert s is not None, "an agree result without a summary"
    out = [
        f"# agree: {ac.a.model} vs {ac.b.model}",
        "",
        f"- suite {ac.suite.name} {ac.suite.version}, {ac.suite.selection}; {ac.extraction}",
        f"- A: {ac.a.engine} at {ac.a.url}: {s.a_correct}/{s.counted} right ({s.a_accuracy_pct}%)",
        f"- B: {ac.b.engine} at {ac.b.url}: {s.b_correct}/{s.counted} right ({s.b_accuracy_pct}%)",
        f"- agreement {s.agree}/{s.counted} ({s.agreement_pct}%); exact McNemar p = {s.mcnemar_p}",
        f"- differing questions: {', '.join(s.differing) or 'none'}",
    ]
    return out


def write_quality_report(result: QualityResult, out_dir: Path, fmt: str) -> Written:
    """Write the picture and ``report.md`` or ``report.html`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(result, NeedleResult):
        plots = [_needle_grid(result, out_dir / "needle-grid.png")]
    else:
        plots = [_agree_table(result, out_dir / "agree-table.png")] if result.summary else []
    lines = _lines(result) + [""] + [f"![{p.stem}]({p.name})" for p in plots]
    if fmt == "md":
        text = "\n".join(lines) + "\n"
    else:
        body = "".join(
            f"<pre>{html.escape(line)}</pre>"
            if not line.startswith("![")
            else f'<img src="{html.escape(line.split("(")[1][:-1])}">'
            for line in lines
        )
        text = f"<!doctype html><meta charset=utf-8><title>rigbook report</title>{body}\n"
    report = out_dir / f"report.{fmt}"
    report.write_text(text, encoding="utf-8")
    return Written(report=report, plots=plots)
