"""An inline SVG chart of decode tok/s against concurrency, drawn on the server (no script).

Claimed points are hollow circles on a dashed line, measured points filled
squares on a solid one, so the two never read as one series. Every text is
escaped; each point has a <title> with its conditions.
"""

from __future__ import annotations

import math
from html import escape

from rigbook.hub.display import shown_conditions, tok_s
from rigbook.hub.leaderboard import effective_conditions, is_capacity, is_measured
from rigbook.recipe.schema import Recipe

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 48
CLAIMED_COLOUR, MEASURED_COLOUR = "#7a5195", "#0b7a4b"
# Larger numbers are not drawn (the axis arithmetic overflows near a double's limit, and no rate or
# latency is this large); the table beside the chart still shows them.
MAX_DRAWN = 1e15


def drawable(value: float | None) -> bool:
    """Whether a chart can place ``value`` (None: nothing to place)."""
    return value is None or (math.isfinite(value) and abs(value) <= MAX_DRAWN)


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= value)


def perf_chart(recipe: Recipe) -> str:
    """The chart as SVG markup, or an empty string when no point has both a concurrency and a decode rate
    (a point beyond :data:`MAX_DRAWN` is left off the chart).

    A `rigbook capacity` point (users at an SLO) is not drawn: its concurrency is where a search
    settled and its rate a median over re-runs, shown in the page's users-at-an-SLO block."""
    # (point, concurrency, decode tok/s) for each point that states both numbers.
    points = [
        (p, p.concurrency, p.decode_tok_s)
        for p in recipe.perf_points
        if p.decode_tok_s is not None
        and p.concurrency is not None
        and not is_capacity(p)
        and drawable(p.decode_tok_s)
        and 0 < p.concurrency <= MAX_DRAWN
    ]
    if not points:
        return ""
    levels = sorted({c for _, c, _ in points})
    y_max = _nice_max(max(v for _, _, v in points))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(c: int) -> float:  # concurrency on a log2 axis, levels spread evenly when there is one
        lo, hi = math.log2(levels[0]), math.log2(levels[-1])
        return LEFT + (plot_w / 2 if hi == lo else (math.log2(c) - lo) / (hi - lo) * plot_w)

    def y(v: float) -> float:
        return TOP + plot_h - v / y_max * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'aria-label="decode tokens per second against concurrency">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#ccc"/>',
    ]
    for i in range(5):
        v = y_max * i / 4
        parts.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>'
            f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="12">{v:g}</text>'
        )
    for c in levels:
        parts.append(
            f'<text x="{x(c):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle" font-size="12">{c}</text>'
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">concurrency</text>'
        f'<text x="14" y="{TOP + plot_h / 2}" transform="rotate(-90 14 {TOP + plot_h / 2})" '
        f'text-anchor="middle" font-size="12">decode tok/s (aggregate)</text>'
    )
    for measured, colour, dash in (
        (False, CLAIMED_COLOUR, ' stroke-dasharray="6 4"'),
        (True, MEASURED_COLOUR, ""),
    ):
        series = sorted(
            (pt for pt in points if is_measured(pt[0]) == measured), key=lambda pt: pt[1]
        )
        if not series:
            continue
        best: dict[int, float] = {}
        for _, c, v in series:
            best[c] = max(best.get(c, 0), v)
        path = " ".join(f"{x(c):.1f},{y(v):.1f}" for c, v in sorted(best.items()))
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        for p, c, v in series:
            cond = ", ".join(
                f"{k}={val}" for k, val in shown_conditions(effective_conditions(recipe, p))
            )
            tip = escape(
                f"{'measured' if measured else 'claimed'}: {tok_s(v)} tok/s at c={c}; {cond}"
            )
            cx, cy = x(c), y(v)
            shape = (
                f'<rect x="{cx - 5:.1f}" y="{cy - 5:.1f}" width="10" height="10" fill="{colour}">'
                if measured
                else f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="#fff" stroke="{colour}" stroke-width="2">'
            )
            parts.append(shape + f"<title>{tip}</title>" + ("</rect>" if measured else "</circle>"))
    parts.append(
        f'<g font-size="12"><circle cx="{LEFT + 14}" cy="{TOP + 14}" r="5" fill="#fff" stroke="{CLAIMED_COLOUR}" '
        f'stroke-width="2"/><text x="{LEFT + 24}" y="{TOP + 18}">claimed</text>'
        f'<rect x="{LEFT + 89}" y="{TOP + 9}" width="10" height="10" fill="{MEASURED_COLOUR}"/>'
        f'<text x="{LEFT + 104}" y="{TOP + 18}">measured</text></g></svg>'
    )
    return "".join(parts)
