"""The Markdown form of a Comparison (`--format md`): a table per pair and each aspect's verdict as a list."""

from __future__ import annotations

from rigbook.compare.present import (
    columns,
    figure_line,
    missing_notes,
    overall_line,
    reason_lines,
    source_line,
)
from rigbook.compare.quality import quality_section
from rigbook.comparison import Comparison


def render_md(comparison: Comparison) -> str:
    """The comparison as Markdown text."""
    by_name = {s.name: s for s in comparison.sources}
    out = ["# rigbook compare", ""]
    for pair in comparison.pairs:
        out += [
            f"## {pair.a} vs {pair.b}",
            "",
            f"- {source_line('A', by_name[pair.a])}",
            f"- {source_line('B', by_name[pair.b])}",
            "",
        ]
        if pair.points:
            cols = columns(pair)
            out += [
                "| " + " | ".join(header for header, _ in cols) + " |",
                "|" + "---:|" * len(cols),
            ]
            out += ["| " + " | ".join(cell(p) for _, cell in cols) + " |" for p in pair.points]
            out.append("")
        elif not pair.quality:
            out += ["No points line up.", ""]
        for verdict in pair.verdicts:
            out.append(f"**{verdict.title}: {verdict.verdict}**")
            out.append("")
            figure = figure_line(pair, verdict.aspect)
            if figure:
                out.append(f"- {figure}")
            overall = overall_line(verdict)
            if overall:
                out.append(f"- {overall}")
            out += [f"- {mark} {text}" for mark, text in reason_lines(verdict)]
            out.append("")
        quality = quality_section(pair.quality, by_name[pair.a], by_name[pair.b])
        if quality:
            out += ["**quality, like for like**", ""]
            out += [
                f"- {line}" if not line.startswith("  ") else f"  - {line.strip()}"
                for line in quality
            ] + [""]
        notes = missing_notes(pair) + [
            f"{side} points with no partner: {'; '.join(labels)}"
            for side, labels in (("A", pair.unmatched_a), ("B", pair.unmatched_b))
            if labels
        ]
        if notes:
            out += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(out).rstrip() + "\n"
