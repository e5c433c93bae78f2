"""The series the throughput and TTFT charts draw from one bench result.

`rigbook report` (PNG) and the hub's recipe page (inline SVG) both draw these, so the two show
the same points and leave out the same cells. A cell is drawn only when it is valid and not
client-bound, the cells a perf point is made of; every other cell is listed with its reason.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from rigbook.bench.result import BenchResult, Cell

# An invalid cell's first reason is cut to this length on a chart; the report's table has them all.
REASON_CHARS = 60


class ThroughputPoint(BaseModel):
    """One cell on the throughput curve: what one user gets against what the hardware gives."""

    concurrency: int
    mode: str
    label: str = Field(description="The point's label on the chart, e.g. 'C=4'.")
    per_user_tok_s: float = Field(description="Median per-request decode rate (x).")
    throughput_tok_s: float = Field(description="Aggregate tok/s divided by the GPU count (y).")


class TtftPoint(BaseModel):
    """One cell on the TTFT chart."""

    concurrency: int
    mode: str
    label: str
    p50_ms: float
    p99_ms: float | None = None


class LeftOut(BaseModel):
    """A cell a chart does not draw, and why."""

    concurrency: int
    mode: str
    reason: str


class Curves(BaseModel):
    """Both charts' points, the throughput's unit, and the cells each leaves out."""

    gpu_count: int | None = Field(description="GPUs the run used; 0 on a CPU; None if unrecorded.")
    unit: str = Field(
        description="'per GPU', 'per machine' (CPU run) or 'total' (GPU count unknown)."
    )
    throughput: list[ThroughputPoint]
    ttft: list[TtftPoint]
    throughput_left_out: list[LeftOut]
    ttft_left_out: list[LeftOut]

    def scale_note(self) -> str | None:
        """Why the throughput is not per GPU, when it is not."""
        if self.gpu_count == 0:
            return "CPU run (no GPU): throughput is per machine"
        if self.gpu_count is None:
            return "GPU count not recorded: throughput is the total, not per GPU"
        return None


def gpu_count(result: BenchResult) -> int | None:
    """GPUs the run used: the rig summary's cards, else the telemetry's, else the perf points'
    stated count when they agree; 0 for a recorded rig without GPUs; None when nothing says."""
    if result.conditions.rig is not None:
        return len(result.conditions.rig.gpus)
    if result.telemetry.gpus:
        return len(result.telemetry.gpus)
    stated = {
        p.conditions.gpu_count
        for p in result.perf_points
        if p.conditions and p.conditions.gpu_count is not None
    }
    return stated.pop() if len(stated) == 1 else None


def _unusable(cell: Cell) -> str | None:
    """Why a cell is not drawn at all: invalid or client-bound."""
    if not cell.valid:
        reasons = cell.invalid_reasons or ["no reason recorded"]
        first = (
            reasons[0] if len(reasons[0]) <= REASON_CHARS else reasons[0][: REASON_CHARS - 1] + "…"
        )
        more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        return f"invalid: {first}{more}"
    if cell.client_bound:
        return "client-bound"
    return None


def curves(result: BenchResult) -> Curves:
    """The throughput and TTFT points of ``result``'s drawable cells, ordered by concurrency."""
    gpus = gpu_count(result)
    divisor = gpus if gpus else 1
    modes = {c.mode for c in result.cells}
    throughput: list[ThroughputPoint] = []
    ttft: list[TtftPoint] = []
    t_out: list[LeftOut] = []
    f_out: list[LeftOut] = []
    for cell in sorted(result.cells, key=lambda c: (c.mode, c.concurrency)):
        m = cell.metrics
        # Mode only in the label when the result mixes modes: a burst C=4 is not a sustained C=4.
        label = f"C={cell.concurrency}" + (f" {cell.mode}" if len(modes) > 1 else "")
        why = _unusable(cell)
        if why:
            t_out.append(LeftOut(concurrency=cell.concurrency, mode=cell.mode, reason=why))
            f_out.append(LeftOut(concurrency=cell.concurrency, mode=cell.mode, reason=why))
            continue
        per_user, aggregate = m.per_request_decode_tok_s.p50, m.aggregate_tok_s
        if per_user is None or aggregate is None:
            t_out.append(
                LeftOut(concurrency=cell.concurrency, mode=cell.mode, reason="no decode rate")
            )
        else:
            throughput.append(
                ThroughputPoint(
                    concurrency=cell.concurrency,
                    mode=cell.mode,
                    label=label,
                    per_user_tok_s=per_user,
                    throughput_tok_s=aggregate / divisor,
                )
            )
        if m.ttft_ms.p50 is None:
            f_out.append(LeftOut(concurrency=cell.concurrency, mode=cell.mode, reason="no TTFT"))
        else:
            ttft.append(
                TtftPoint(
                    concurrency=cell.concurrency,
                    mode=cell.mode,
                    label=label,
                    p50_ms=m.ttft_ms.p50,
                    p99_ms=m.ttft_ms.p99,
                )
            )
    unit = "per GPU" if gpus else ("per machine" if gpus == 0 else "total")
    return Curves(
        gpu_count=gpus,
        unit=unit,
        throughput=throughput,
        ttft=ttft,
        throughput_left_out=t_out,
        ttft_left_out=f_out,
    )


def left_out_note(left: list[LeftOut]) -> str | None:
    """'left out: C=1 (client-bound: …), C=16 (invalid: …)', or None when every cell is drawn."""
    if not left:
        return None
    return "left out: " + ", ".join(f"C={c.concurrency} {c.mode} ({c.reason})" for c in left)
