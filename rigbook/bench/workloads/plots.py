"""The session workloads' chart: TTFT by turn, and the prefix-cache hit rate by concurrency.

Left, one line per cell: each turn's median TTFT, so a first turn's cold prefill stands apart
from the later turns the cache served. Right: the share of the cell's prompt tokens the engine
said it served from cache, by concurrency (its responses' own counts, else vLLM's counters).
Both axes start at zero.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt

from rigbook.bench.result import BenchResult, Cell


def has_turns(result: BenchResult) -> bool:
    """Whether the result ran a session workload (its cells have turns to draw)."""
    return any(c.turns for c in result.cells)


def hit_rate(cell: Cell) -> float | None:
    """The cell's prefix-cache hit rate: its responses' own counts, else the engine's counters."""
    cache = cell.prefix_cache
    if cache is None:
        return None
    return cache.hit_rate if cache.hit_rate is not None else cache.engine_hit_rate


def plot_turns(result: BenchResult, path: Path) -> Path:
    """Write ``path``: TTFT p50 by turn per cell (left), hit rate by concurrency (right)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4))
    cells = [c for c in result.cells if c.turns]
    top = 1.0
    for c in cells:
        turns = [t.turn for t in c.turns]
        p50 = [t.ttft_ms.p50 if t.ttft_ms.p50 is not None else math.nan for t in c.turns]
        top = max([top, *(v for v in p50 if not math.isnan(v))])
        left.plot(turns, p50, "o-", label=f"C={c.concurrency}" + ("" if c.valid else " (invalid)"))
    left.set_xlim(0, max([t.turn for c in cells for t in c.turns] or [1]) + 0.5)
    left.set_ylim(0, top * 1.15)
    left.set_xticks(sorted({t.turn for c in cells for t in c.turns}) or [1])
    left.set_xlabel("turn (1: each user's first)")
    left.set_ylabel("time to first token, p50 (ms)")
    left.set_title("TTFT by turn", fontsize=11)
    left.grid(alpha=0.3)
    if cells:
        left.legend(fontsize="small")
    rated = sorted(
        ((c.concurrency, rate) for c in cells if (rate := hit_rate(c)) is not None),
    )
    right.plot([x for x, _ in rated], [100.0 * y for _, y in rated], "o-")
    right.set_xlim(0, max([x for x, _ in rated] or [1]) * 1.1)
    right.set_ylim(0, 105)
    right.set_xlabel("concurrency (users)")
    right.set_ylabel("prompt tokens served from cache (%)")
    right.set_title("prefix-cache hit rate (engine's own readings)", fontsize=11)
    right.grid(alpha=0.3)
    if not rated:
        right.text(0.5, 0.5, "the engine gave no reading", ha="center", transform=right.transAxes)
    name = result.conditions.workload.name if result.conditions.workload else "prose"
    fig.suptitle(f"{result.conditions.model}: workload {name}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
