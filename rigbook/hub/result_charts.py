"""The recipe page's charts of its published results, as inline SVG drawn on the server.

Two charts, the ones `rigbook report` writes as PNG (docs/report.md): throughput per GPU against
tokens per second per user, each point labelled with its concurrency, and TTFT p50/p99 against
concurrency. The points come from :func:`rigbook.bench.curves.curves` of each bench result the hub
accepted for the recipe, so invalid and client-bound cells are left out here too and named under
the charts. Both axes start at zero. No script and no fetch: presentation attributes only, which
the hub's Content-Security-Policy allows; every text is escaped.
"""

from __future__ import annotations

import math
from html import escape

from pydantic import BaseModel, ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rigbook.bench.curves import Curves, LeftOut, curves, left_out_note
from rigbook.bench.result import BenchResult
from rigbook.hub.chart import drawable
from rigbook.hub.display import tok_s
from rigbook.hub.models import ResultRow

# The newest results drawn; more lines than this no longer read apart.
MAX_RESULTS = 6
COLOURS = ("#0b7a4b", "#1f5fa8", "#c25400", "#7a5195", "#a8323e", "#4d6b00")
WIDTH, PLOT_H = 640, 280
LEFT, RIGHT, TOP, AXIS = 64, 24, 16, 44
LEGEND_ROW = 18
CHAR_PX, TEXT_PX = 7, 12  # a label's box: about 7 px a character, 12 px high (font-size 12)
# Where a point's label may go, tried in turn (dx, dy of its baseline start): the first that
# covers no marker and no earlier label wins; points near the knee often sit a few pixels apart.
LABEL_SPOTS = ((7, -7), (7, 17), (-40, -7), (-40, 17), (7, -21), (7, 31))


class Published(BaseModel):
    """One accepted result as the charts name it, with its points."""

    name: str
    curves: Curves


class ResultCharts(BaseModel):
    """The page's two SVGs and the notes under them."""

    throughput_svg: str
    ttft_svg: str
    unit: str
    notes: list[str]


class Shelf(BaseModel):
    """What the page draws: the newest results, and how many it leaves aside."""

    published: list[Published]
    older: int = 0
    unreadable: list[str] = []


def published_curves(session: Session, slug: str) -> Shelf:
    """The newest ``MAX_RESULTS`` results published for ``slug``, oldest first."""
    total = session.scalar(select(func.count()).where(ResultRow.slug == slug)) or 0
    rows = session.scalars(
        select(ResultRow)
        .where(ResultRow.slug == slug)
        .order_by(ResultRow.id.desc())
        .limit(MAX_RESULTS)
    ).all()
    shelf = Shelf(published=[], older=total - len(rows))
    for row in reversed(rows):
        short = row.content_hash.removeprefix("sha256:")[:12]
        try:
            result = BenchResult.model_validate_json(row.body)
        except ValidationError:
            # Stored under an older result model that no longer reads: the page must still render.
            shelf.unreadable.append(short)
            continue
        name = f"{short} ({result.conditions.started_at[:10]})"
        shelf.published.append(Published(name=name, curves=curves(result)))
    return shelf


def _top(value: float) -> float:
    """A round axis end at or above ``value``."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    return next(
        m * magnitude for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * magnitude >= value
    )


def _num(value: float) -> str:
    return f"{value:g}" if value < 10_000 else f"{value / 1000:g}k"


class _Frame:
    """An SVG plot area with both axes from zero, ticks, labels and a legend row per series."""

    def __init__(self, x_max: float, y_max: float, legend_rows: int) -> None:
        self.x_max, self.y_max = _top(x_max), _top(y_max)
        self.plot_w = WIDTH - LEFT - RIGHT
        self.height = TOP + PLOT_H + AXIS + LEGEND_ROW * legend_rows + 4

    def x(self, v: float) -> float:
        return LEFT + v / self.x_max * self.plot_w

    def y(self, v: float) -> float:
        return TOP + PLOT_H - v / self.y_max * PLOT_H

    def open(self, label: str, x_label: str, y_label: str) -> list[str]:
        parts = [
            f'<svg class="result-chart" width="100%" viewBox="0 0 {WIDTH} {self.height}" role="img" '
            f'xmlns="http://www.w3.org/2000/svg" aria-label="{escape(label)}">',
            f'<rect x="{LEFT}" y="{TOP}" width="{self.plot_w}" height="{PLOT_H}" fill="none" stroke="#ccc"/>',
        ]
        for i in range(5):
            xv, yv = self.x_max * i / 4, self.y_max * i / 4
            parts.append(
                f'<line x1="{LEFT}" x2="{LEFT + self.plot_w}" y1="{self.y(yv):.1f}" y2="{self.y(yv):.1f}" stroke="#eee"/>'
                f'<text x="{LEFT - 6}" y="{self.y(yv) + 4:.1f}" text-anchor="end" font-size="12">{_num(yv)}</text>'
                f'<text x="{self.x(xv):.1f}" y="{TOP + PLOT_H + 16}" text-anchor="middle" font-size="12">{_num(xv)}</text>'
            )
        mid = TOP + PLOT_H / 2
        parts.append(
            f'<text x="{LEFT + self.plot_w / 2}" y="{TOP + PLOT_H + 34}" text-anchor="middle" font-size="12">'
            f"{escape(x_label)}</text>"
            f'<text x="14" y="{mid}" transform="rotate(-90 14 {mid})" text-anchor="middle" font-size="12">'
            f"{escape(y_label)}</text>"
        )
        return parts

    def legend(self, row: int, colour: str, text: str) -> str:
        y = TOP + PLOT_H + AXIS + LEGEND_ROW * row + 12
        return (
            f'<line x1="{LEFT}" x2="{LEFT + 20}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" stroke-width="2"/>'
            f'<text x="{LEFT + 26}" y="{y}" font-size="12">{escape(text)}</text>'
        )


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _labels(spots: list[tuple[float, float, str]]) -> list[str]:
    """A text per point, placed off every marker and every earlier label where one of the spots allows."""
    markers = [(px - 6, py - 6, px + 6, py + 6) for px, py, _ in spots]
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for px, py, text in spots:
        for dx, dy in LABEL_SPOTS:
            x, y = px + dx, py + dy
            box = (x, y - TEXT_PX + 2, x + CHAR_PX * len(text), y + 2)
            if not any(_overlaps(box, other) for other in markers + placed):
                break
        placed.append(box)
        out.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="12">{escape(text)}</text>')
    return out


def throughput_svg(published: list[Published], unit: str) -> str:
    """Throughput ``unit`` (y) against tok/s per user (x), a line per result, each point labelled 'C=N'."""
    points = [p for r in published for p in r.curves.throughput]
    frame = _Frame(
        max((p.per_user_tok_s for p in points), default=1.0) * 1.1,
        max((p.throughput_tok_s for p in points), default=1.0) * 1.1,
        len(published),
    )
    parts = frame.open(
        f"output tokens per second {unit} against tokens per second per user",
        "tok/s per user (median per-request decode rate)",
        f"tok/s {unit} (aggregate)",
    )
    spots = []
    for i, (result, colour) in enumerate(zip(published, COLOURS, strict=False)):
        pts = sorted(result.curves.throughput, key=lambda p: (p.mode, p.concurrency))
        if len(pts) > 1:
            path = " ".join(
                f"{frame.x(p.per_user_tok_s):.1f},{frame.y(p.throughput_tok_s):.1f}" for p in pts
            )
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for p in pts:
            cx, cy = frame.x(p.per_user_tok_s), frame.y(p.throughput_tok_s)
            tip = escape(
                f"result {result.name}, {p.label}: {tok_s(p.throughput_tok_s)} tok/s {unit}, "
                f"{tok_s(p.per_user_tok_s)} tok/s per user"
            )
            parts.append(
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{colour}"><title>{tip}</title></circle>'
            )
            spots.append((cx, cy, p.label))
        parts.append(frame.legend(i, colour, f"result {result.name}"))
    parts += _labels(spots)
    parts.append("</svg>")
    return "".join(parts)


def ttft_svg(published: list[Published]) -> str:
    """TTFT p50 (solid, circles) and p99 (dashed, squares) in ms against concurrency, a colour per result."""
    points = [p for r in published for p in r.curves.ttft]
    frame = _Frame(
        max((p.concurrency for p in points), default=1) * 1.05,
        max((max(p.p50_ms, p.p99_ms or 0.0) for p in points), default=1.0) * 1.05,
        len(published),
    )
    parts = frame.open(
        "time to first token, p50 and p99, against concurrency",
        "concurrency",
        "TTFT ms (p50 solid, p99 dashed)",
    )
    for i, (result, colour) in enumerate(zip(published, COLOURS, strict=False)):
        pts = sorted(result.curves.ttft, key=lambda p: (p.mode, p.concurrency))
        for which, dash in (("p50", ""), ("p99", ' stroke-dasharray="6 4"')):
            values = [
                (p, v) for p in pts if (v := p.p50_ms if which == "p50" else p.p99_ms) is not None
            ]
            if len(values) > 1:
                path = " ".join(f"{frame.x(p.concurrency):.1f},{frame.y(v):.1f}" for p, v in values)
                parts.append(
                    f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
                )
            for p, v in values:
                cx, cy = frame.x(p.concurrency), frame.y(v)
                tip = escape(f"result {result.name}, {p.label}: TTFT {which} {v:,.1f} ms")
                shape = (
                    f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{colour}">'
                    if which == "p50"
                    else f'<rect x="{cx - 4:.1f}" y="{cy - 4:.1f}" width="8" height="8" fill="#fff" '
                    f'stroke="{colour}" stroke-width="2">'
                )
                parts.append(
                    f"{shape}<title>{tip}</title>{'</circle>' if which == 'p50' else '</rect>'}"
                )
        parts.append(frame.legend(i, colour, f"result {result.name}"))
    parts.append("</svg>")
    return "".join(parts)


def _left_out_lines(name: str, throughput: list[LeftOut], ttft: list[LeftOut]) -> list[str]:
    if throughput == ttft:
        note = left_out_note(throughput)
        return [f"result {name}, both charts: {note}"] if note else []
    return [
        f"result {name}, {chart} chart: {note}"
        for chart, note in (
            ("throughput", left_out_note(throughput)),
            ("TTFT", left_out_note(ttft)),
        )
        if note
    ]


def in_range(result: Published) -> bool:
    """Whether every number of a result's curves can be placed on a chart."""
    values: list[float | None] = [
        v for p in result.curves.throughput for v in (p.per_user_tok_s, p.throughput_tok_s)
    ]
    values += [v for p in result.curves.ttft for v in (p.concurrency, p.p50_ms, p.p99_ms)]
    return all(drawable(v) for v in values)


def result_charts(shelf: Shelf) -> ResultCharts | None:
    """Both charts of the shelf's results, or None when none has a cell to draw. A result with a
    number out of drawing range (stored before the hub bounded it) is named in the notes instead."""
    drawn = [r for r in shelf.published if (r.curves.throughput or r.curves.ttft) and in_range(r)]
    if not drawn:
        return None
    unit = " or ".join(sorted({r.curves.unit for r in drawn}))
    notes = []
    for r in shelf.published:
        scale = r.curves.scale_note()
        if scale:
            notes.append(f"result {r.name}: {scale}")
        if not in_range(r):
            notes.append(f"result {r.name}: a number out of drawing range; not drawn")
        elif r not in drawn:
            notes.append(f"result {r.name}: no cell to draw")
        notes += _left_out_lines(r.name, r.curves.throughput_left_out, r.curves.ttft_left_out)
    notes += [
        f"result {short}: stored in a form this hub no longer reads" for short in shelf.unreadable
    ]
    if shelf.older:
        notes.append(f"{shelf.older} older result(s) not drawn: the newest {MAX_RESULTS} are")
    return ResultCharts(
        throughput_svg=throughput_svg(drawn, unit),
        ttft_svg=ttft_svg(drawn),
        unit=unit,
        notes=notes,
    )
