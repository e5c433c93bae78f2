"""BenchResult documents built through the bench result model, as `rigbook bench` writes them.

One GPU (an H200) serving the embedded SmolLM2-135M Q4_1 model, cells at
concurrency 1 and 4; energy is measured or not, the mode and profile are
burst and prose-400 v1 or not, and the rig has a GPU or only a CPU, as each
test needs.
"""

from __future__ import annotations

from pathlib import Path

from rigbook.bench.result import (
    BenchResult,
    Cell,
    CellMetrics,
    CellTelemetry,
    Conditions,
    Distribution,
    GpuCellTelemetry,
    GpuRunTelemetry,
    ProfileRef,
    RunTelemetry,
    save_result,
)
from rigbook.recipe.schema import PerfConditions, PerfPoint, Sampling
from rigbook.rig.model import GpuSummary, RigSummary

PROFILE = ProfileRef(
    name="prose-400",
    version=1,
    content_hash="0" * 40,
    max_tokens=400,
    temperature=0.0,
    top_p=1.0,
    thinking=False,
    reply_length_held=True,
    workload="prose",
)


def _cell(
    index: int, concurrency: int, tok_s: float, energy_j_per_token: float | None, mode: str
) -> Cell:
    dist = Distribution(n=concurrency, mean=tok_s / concurrency, p50=tok_s / concurrency)
    telemetry = CellTelemetry(
        available=energy_j_per_token is not None,
        reason=None if energy_j_per_token is not None else "no NVML on this host",
        gpus=[GpuCellTelemetry(index=0, name="NVIDIA H200", power_limit_w=700.0)]
        if energy_j_per_token is not None
        else [],
        power_limit_w_per_gpu=[700.0] if energy_j_per_token is not None else [],
        energy_j_per_token=energy_j_per_token,
    )
    metrics = CellMetrics(
        per_request_decode_tok_s=dist,
        aggregate_tok_s=tok_s,
        ttft_ms=Distribution(),
        ttfct_ms=Distribution(),
        itl_ms=Distribution(),
        prefill_tok_s=Distribution(),
        output_tokens=Distribution(),
        concurrency_reached=concurrency,
        requests_ok=concurrency,
        requests_failed=0,
    )
    return Cell(
        index=index,
        mode=mode,
        concurrency=concurrency,
        token_count_source="server_continuous",
        valid=True,
        metrics=metrics,
        telemetry=telemetry,
    )


def make_result(
    *,
    energy: dict[int, float] | None,
    full_point_conditions: bool = True,
    rates: dict[int, float] | None = None,
    mode: str = "burst",
    profile: ProfileRef = PROFILE,
    cpu_only: str | None = None,
) -> BenchResult:
    """A hashed result. ``energy`` maps concurrency to measured J/token (None: no telemetry).

    With ``full_point_conditions`` the perf points carry every condition themselves, as the bench
    runner fills them; without, they carry only what the runner cannot know at the run level
    (GPU count, card, quant …), and the rest comes from the run's conditions and cells.
    ``cpu_only`` names the CPU of a rig with no GPU: the points then say 0 GPUs and no card."""
    rates = rates or {1: 520.0, 4: 1480.0}
    cells = [_cell(i, c, r, (energy or {}).get(c), mode) for i, (c, r) in enumerate(rates.items())]
    points = []
    for c, r in rates.items():
        cond = PerfConditions(
            gpu_count=1,
            card="NVIDIA H200",
            power_limit_w_per_gpu=700.0,
            quant="Q4_1",
            kv_cache_dtype="f16",
            speculative_method="none",
        )
        if cpu_only:
            cond = cond.model_copy(update=dict(gpu_count=0, card=None, power_limit_w_per_gpu=None))
        if full_point_conditions:
            cond = cond.model_copy(
                update=dict(
                    sampling=Sampling(temperature=0.0, top_p=1.0),
                    reply_tokens=400,
                    reply_length_held=True,
                    thinking=False,
                    token_count_source="server_continuous",
                    bench_tool="rigbook",
                    bench_tool_version="0.1.0",
                    workload="prose",
                    engine="llama.cpp",
                    engine_version="llama-cpp-python 0.3.36",
                    energy_j_per_token=(energy or {}).get(c),
                )
            )
        notes = f"rigbook {mode}, profile {profile.name} v{profile.version}, {c} requests at concurrency {c}"
        points.append(
            PerfPoint(
                context_len=None,
                decode_tok_s=r,
                concurrency=c,
                claimed_by="measured",
                notes=notes,
                conditions=cond,
            )
        )
    run_energy = energy is not None
    gpus = (
        []
        if cpu_only
        else [GpuSummary(index=0, name="NVIDIA H200", uuid="GPU-0", power_enforced_limit_w=700.0)]
    )
    rig = RigSummary(
        hostname="bench",
        os="Linux",
        cpu=cpu_only or "Intel Xeon",
        driver_version=None,
        cuda_driver_version=None,
        gpus=gpus,
    )
    result = BenchResult(
        conditions=Conditions(
            url="http://127.0.0.1:8080",
            model="smollm2-135m-instruct",
            engine="llama.cpp",
            engine_version="llama-cpp-python 0.3.36",
            recipe_slug="smollm2-135m-instruct-q4-1-on-1x-h200-llama-cpp-cuda",
            rig=rig,
            profile=profile,
            mode=mode,
            rigbook_version="0.1.0",
            started_at="2026-10-21T10:00:00Z",
        ),
        cells=cells,
        perf_points=points,
        telemetry=RunTelemetry(
            available=run_energy,
            source="nvml" if run_energy else None,
            gpus=[GpuRunTelemetry(index=0, name="NVIDIA H200", power_limit_w=700.0)]
            if run_energy
            else [],
            power_limit_w_per_gpu=[700.0] if run_energy else [],
        ),
    )
    return result.with_hash()


def write_result(path: Path, **kwargs) -> Path:
    """Save a result the way `rigbook bench` does and return its path."""
    return save_result(make_result(**kwargs), path)
