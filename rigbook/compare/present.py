"""Plain-text pieces both renderers share: numbers, figure lines, grouped reasons, why a figure is missing."""

from __future__ import annotations

from collections.abc import Callable

from rigbook.comparison import AspectVerdict, PairComparison, PointPair, Side, Source

MARKS = {"not_comparable": "✗", "caveat": "!", "unknown": "?"}


def num(value: float | None, digits: int = 1) -> str:
    """A number for a table cell; '—' when there is none."""
    return "—" if value is None else f"{value:,.{digits}f}"


def rate(value: float | None, compact: bool) -> str:
    """A tok/s cell; compact: whole numbers from 100 up, no thousands separator."""
    if not compact or value is None:
        return num(value)
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}%"


def source_line(letter: str, source: Source) -> str:
    """'A  slug (recipe)' with what was left out."""
    kind = {
        "bench_result": "bench result",
        "capacity": "capacity result",
        "quality_result": "quality result",
    }.get(source.kind, "recipe")
    text = f"{letter}  {source.name} ({kind}"
    text += (
        f", hash {source.content_hash.removeprefix('sha256:')[:12]} verified)"
        if source.content_hash
        else ")"
    )
    if source.quality:
        text += f"; {len(source.quality)} quality point(s)"
    if source.skipped:
        text += f"; {len(source.skipped)} point(s) left out: " + "; ".join(source.skipped)
    return text


def ceiling_cell(side: Side, compact: bool = False) -> str:
    """'1.2% of ≤56,900' (compact: '1.2%', the ceiling goes in :func:`ceiling_line`) or '—'."""
    roof = side.derived.roofline
    if roof is None:
        return "—"
    return (
        f"{roof.pct_of_ceiling:.1f}%"
        if compact
        else f"{roof.pct_of_ceiling:.1f}% of ≤{roof.ceiling_tok_s:,.0f}"
    )


def ceiling_line(pair: PairComparison) -> str | None:
    """The ceilings the compact cells are a share of: 'bandwidth ceiling, tok/s: A ≤56,889 (c1), …'."""
    parts = []
    for letter in ("a", "b"):
        found = [
            f"≤{s.derived.roofline.ceiling_tok_s:,.0f} ({point_key(p)})"
            for p in pair.points
            if (s := getattr(p, letter)).derived.roofline is not None
        ]
        if found:
            parts.append(f"{letter.upper()} " + ", ".join(found))
    return "bandwidth ceiling, tok/s: " + "; ".join(parts) if parts else None


def columns(
    pair: PairComparison, compact: bool = False
) -> list[tuple[str, Callable[[PointPair], str]]]:
    """(header, cell) per column; the energy and ceiling columns only when some point has them.

    ``compact`` (the terminal) leaves out a context column with no context in it and shortens
    the ceiling cells, so the table fits 80 columns."""
    cols: list[tuple[str, Callable[[PointPair], str]]] = [("conc", lambda p: str(p.concurrency))]
    if any(p.slo is not None for p in pair.points):
        # Two capacities: the users each serves at the SLO, then the aggregate at that many.
        cols = [
            ("A users", lambda p: str(p.a.point.users_at_slo)),
            ("B users", lambda p: str(p.b.point.users_at_slo)),
            ("users A/B", lambda p: pct(p.users_ratio_pct)),
        ]
    if not compact or any(p.context_len is not None for p in pair.points):
        cols.append(("ctx", lambda p: "—" if p.context_len is None else str(p.context_len)))
    cols += [
        ("A tok/s", lambda p: rate(p.a.point.decode_tok_s, compact)),
        ("B tok/s", lambda p: rate(p.b.point.decode_tok_s, compact)),
        ("A/B", lambda p: pct(p.decode_ratio_pct)),
        ("A per GPU", lambda p: rate(p.a.derived.decode_tok_s_per_gpu, compact)),
        ("B per GPU", lambda p: rate(p.b.derived.decode_tok_s_per_gpu, compact)),
    ]
    if any(s.derived.tok_s_per_w is not None for p in pair.points for s in (p.a, p.b)):
        cols += [
            ("A tok/s/W", lambda p: num(p.a.derived.tok_s_per_w, 3)),
            ("B tok/s/W", lambda p: num(p.b.derived.tok_s_per_w, 3)),
        ]
    if any(s.derived.roofline is not None for p in pair.points for s in (p.a, p.b)):
        cols += [
            (
                "A % of BW ceiling" if compact else "A of BW ceiling",
                lambda p: ceiling_cell(p.a, compact),
            ),
            (
                "B % of BW ceiling" if compact else "B of BW ceiling",
                lambda p: ceiling_cell(p.b, compact),
            ),
        ]
    return cols


def point_key(p: PointPair) -> str:
    if p.slo is not None:
        return f"SLO {p.slo}"
    return f"c{p.concurrency}" + (f"/ctx {p.context_len}" if p.context_len not in (None, 1) else "")


def figure_line(pair: PairComparison, aspect: str) -> str | None:
    """What the aspect's figure is at each point, e.g. 'A is 67.6% (c1), 70.3% (c4) of B'."""
    parts = []
    for p in pair.points:
        v = next((v for v in p.verdicts if v.aspect == aspect), None)
        if v is not None and v.figure_pct is not None:
            parts.append(f"{v.figure_pct:.1f}% ({point_key(p)})")
    if not parts:
        return None
    # Under an SLO every aspect's figure but power efficiency is the users ratio (aspect_verdicts).
    capacity = aspect != "power_efficiency" and any(p.slo is not None for p in pair.points)
    return (
        f"A's {'users at the SLO' if capacity else _what(aspect)} is "
        + ", ".join(parts)
        + " of B's"
    )


def _what(aspect: str) -> str:
    return "tok/s per W" if aspect == "power_efficiency" else "decode tok/s"


def overall_line(verdict: AspectVerdict) -> str | None:
    """The pair's one figure, e.g. "overall: A's decode tok/s is 69.3% of B's across 3 points (geometric mean)".

    Left out for a single point: its figure is already on the line above."""
    if verdict.figure_pct is None or not verdict.figure_points or verdict.figure_points < 2:
        return None
    return (
        f"overall: A's {_what(verdict.aspect)} is {verdict.figure_pct:.1f}% of B's "
        f"across {verdict.figure_points} points (geometric mean)"
    )


def reason_lines(verdict: AspectVerdict) -> list[tuple[str, str]]:
    """(mark, text) per reason; unknowns grouped by side so a long list stays readable."""
    lines: list[tuple[str, str]] = []
    unknown: dict[str, list[str]] = {}
    for r in verdict.reasons:
        if r.kind == "unknown_both":
            unknown.setdefault("both sides", []).append(
                r.message.removesuffix(" unknown on both sides")
            )
        elif r.kind == "unknown_one_side":
            side, other, known = ("A", "B", r.b) if r.a is None else ("B", "A", r.a)
            label = r.message.split(" unknown on ")[0]
            unknown.setdefault(side, []).append(f"{label} ({other}: {known})")
        else:
            lines.append((MARKS[r.severity], r.message))
    for where, labels in unknown.items():
        lines.append((MARKS["unknown"], f"unknown on {where}: " + ", ".join(labels)))
    return lines


def missing_notes(pair: PairComparison) -> list[str]:
    """Why a derived figure is absent, once per side and reason."""
    notes: list[str] = []
    for letter, getter in (("A", lambda p: p.a), ("B", lambda p: p.b)):
        for p in pair.points:
            d = getter(p).derived
            for what, why in (
                ("tok/s per W", d.tok_s_per_w_unavailable),
                ("bandwidth ceiling", d.roofline_unavailable),
            ):
                note = f"{letter} {what}: {why}"
                if why and note not in notes:
                    notes.append(note)
    return notes
