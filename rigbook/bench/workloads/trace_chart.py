"""The schedule-lag chart of a trace replay: how late each request went out against its
planned time, over the replay, with the p50, the p99 and the limit past which W_TRACE_LAG is due."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt

from rigbook.bench.workloads.trace import TraceReplay


def plot_schedule_lag(replay: TraceReplay, path: Path) -> Path:
    """One point per sent request: planned time (s) across, lag (ms) up; the axis starts at 0."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.scatter(replay.planned_s, replay.lag_ms, s=8, color="#1f77b4", label="request")
    lag = replay.lag
    if lag is not None:
        ax.axhline(lag.p50_ms, color="#2ca02c", linestyle="--", label=f"p50 {lag.p50_ms:.2f} ms")
        ax.axhline(lag.p99_ms, color="#ff7f0e", linestyle="--", label=f"p99 {lag.p99_ms:.2f} ms")
        ax.axhline(lag.limit_ms, color="#d62728", label=f"limit {lag.limit_ms:g} ms")
        top = max(lag.max_ms, lag.limit_ms)
        ax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
    ax.set_xlim(left=0)
    ax.set_xlabel(f"planned send time (s, at speed {replay.speed:g})")
    ax.set_ylabel("schedule lag (ms)")
    ax.set_title(f"Schedule lag: {Path(replay.source).name}, {replay.requests_sent} requests")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
