"""`rigbook report`'s throughput and TTFT charts (PNG), drawn from :mod:`rigbook.bench.curves`.

Both axes of both charts start at zero, so a ratio read off the picture is the ratio of the
numbers. Cells the curves leave out (invalid, client-bound) are named in a note under the plot,
never drawn.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from rigbook.bench.curves import Curves, left_out_note

# Headroom above the largest value, so the top point's label stays inside the axes.
HEADROOM = 1.18
# Offsets (points) tried in turn for a point's label; the first whose text covers no marker and no
# label already placed wins. Neighbouring cells near the knee often sit a few pixels apart.
LABEL_OFFSETS = ((6, 6), (6, -14), (-38, 6), (-38, -14), (8, 18), (8, -26), (-38, 18), (-38, -26))
MARKER_PX = 6


def _finish(fig: Figure, ax: Axes, notes: list[str], path: Path) -> Path:
    """Notes under the axes (wrapped), then the file."""
    lines = [line for note in notes for line in textwrap.wrap(note, 95)]
    if lines:
        fig.text(0.01, 0.01, "\n".join(lines), fontsize=7.5, va="bottom", ha="left", color="#444")
    # Room at the bottom for the notes; tight_layout fits the axes into the rest.
    fig.tight_layout(rect=(0, 0.035 * len(lines), 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _label_points(ax: Axes, points: list[tuple[float, float, str]]) -> None:
    """Label each point where its text covers no marker and no earlier label (else at the last try)."""
    fig = ax.figure
    fig.canvas.draw()  # the transforms are final only once the limits are set and laid out
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    markers = [
        Bbox.from_bounds(px - MARKER_PX, py - MARKER_PX, 2 * MARKER_PX, 2 * MARKER_PX)
        for px, py in (ax.transData.transform((x, y)) for x, y, _ in points)
    ]
    placed: list[Bbox] = []
    for x, y, text in points:
        for i, (dx, dy) in enumerate(LABEL_OFFSETS):
            note = ax.annotate(
                text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=9
            )
            box = note.get_window_extent(renderer)
            last = i == len(LABEL_OFFSETS) - 1
            if last or not any(box.overlaps(other) for other in markers + placed):
                break
            note.remove()
        placed.append(box)


def plot_throughput(curves: Curves, model: str, path: Path) -> Path:
    """Throughput per GPU (y) against tok/s per user (x), one point per drawn cell labelled with its
    concurrency: the knee is where more users stop adding throughput and only cost each user speed."""
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for mode in sorted({p.mode for p in curves.throughput}):
        pts = sorted((p for p in curves.throughput if p.mode == mode), key=lambda p: p.concurrency)
        ax.plot(
            [p.per_user_tok_s for p in pts],
            [p.throughput_tok_s for p in pts],
            "o-",
            label=mode,
        )
    xs = [p.per_user_tok_s for p in curves.throughput] or [1.0]
    ys = [p.throughput_tok_s for p in curves.throughput] or [1.0]
    ax.set_xlim(0, max(xs) * HEADROOM)
    ax.set_ylim(0, max(ys) * HEADROOM)
    ax.set_xlabel("tokens/s per user (median per-request decode rate)")
    ax.set_ylabel(f"output tokens/s {curves.unit} (aggregate)")
    ax.set_title(f"{model}: throughput {curves.unit} vs speed per user", fontsize=11)
    ax.grid(alpha=0.3)
    if len({p.mode for p in curves.throughput}) > 1:
        ax.legend(fontsize="small")
    _label_points(ax, [(p.per_user_tok_s, p.throughput_tok_s, p.label) for p in curves.throughput])
    notes = [n for n in (curves.scale_note(), left_out_note(curves.throughput_left_out)) if n]
    if not curves.throughput:
        notes.insert(0, "no cell to draw")
    return _finish(fig, ax, notes, path)


def plot_ttft(curves: Curves, model: str, path: Path) -> Path:
    """TTFT p50 and p99 (ms) against concurrency, one line each per mode."""
    fig, ax = plt.subplots(figsize=(7, 4.8))
    modes = sorted({p.mode for p in curves.ttft})
    for mode in modes:
        pts = sorted((p for p in curves.ttft if p.mode == mode), key=lambda p: p.concurrency)
        suffix = f" ({mode})" if len(modes) > 1 else ""
        xs = [p.concurrency for p in pts]
        ax.plot(xs, [p.p50_ms for p in pts], "o-", label=f"TTFT p50{suffix}")
        ax.plot(
            xs,
            [p.p99_ms if p.p99_ms is not None else float("nan") for p in pts],
            "s--",
            label=f"TTFT p99{suffix}",
        )
    levels = sorted({p.concurrency for p in curves.ttft}) or [1]
    top = max(
        [p.p99_ms for p in curves.ttft if p.p99_ms is not None]
        + [p.p50_ms for p in curves.ttft]
        + [1.0]
    )
    ax.set_xlim(0, max(levels) * 1.08)
    ax.set_ylim(0, top * 1.1)
    # The axis starts at zero either way; its tick is left out where it would print over the first level's.
    ax.set_xticks(levels if levels[0] < 0.05 * levels[-1] else [0, *levels])
    ax.set_xlabel("concurrency")
    ax.set_ylabel("time to first token (ms)")
    ax.set_title(f"{model}: time to first token", fontsize=11)
    ax.grid(alpha=0.3)
    if curves.ttft:
        ax.legend(fontsize="small", loc="upper left")
    notes = [n for n in (left_out_note(curves.ttft_left_out),) if n]
    if not curves.ttft:
        notes.insert(0, "no cell to draw")
    return _finish(fig, ax, notes, path)
