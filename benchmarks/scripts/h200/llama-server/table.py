"""Print benchmarks/runs/2026-12-03-h200-flow/notes.md's H200 llama-server table from the committed runs.

Each row is one bench cell of runs/<quant>/result.json; the share of the memory-bandwidth ceiling
is the figure `rigbook compare` computed on the device (runs/compare/f16-vs-*.json), so the table
and compare cannot disagree. Usage: python benchmarks/scripts/h200/llama-server/table.py
"""

from __future__ import annotations

import json
from pathlib import Path

RUNS = Path(__file__).resolve().parents[3] / "runs" / "2026-12-04-h200-llama-server-quants"
# (label in the table, run folder, compare file, side of that file the run is on)
SOURCES = [
    ("F16", "f16", "f16-vs-q8-0.json", "a"),
    ("Q8_0", "q8-0", "f16-vs-q8-0.json", "b"),
    ("Q4_K_M", "q4-k-m", "f16-vs-q4-k-m.json", "b"),
]


def ceiling_shares(compare_file: str, side: str) -> dict[int, tuple[float, float]]:
    """Concurrency → (share of the ceiling in %, the ceiling in tok/s) from a compare result."""
    pair = json.loads((RUNS / "compare" / compare_file).read_text())["pairs"][0]
    shares = {}
    for point in pair["points"]:
        roofline = point[side]["derived"]["roofline"]
        shares[point["concurrency"]] = (roofline["pct_of_ceiling"], roofline["ceiling_tok_s"])
    return shares


def rows() -> list[str]:
    out = [
        "| quant | C | aggregate tok/s | per-request tok/s (median) | TTFT p50 / p99 ms "
        "| W (mean draw) | J/token | % of bandwidth ceiling |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, folder, compare_file, side in SOURCES:
        result = json.loads((RUNS / folder / "result.json").read_text())
        shares = ceiling_shares(compare_file, side)
        for cell in result["cells"]:
            m, c = cell["metrics"], cell["concurrency"]
            gpu = cell["telemetry"]["gpus"][0]
            watts = gpu["power_draw_w"]["mean"]
            energy = next(p for p in result["perf_points"] if p["concurrency"] == c)
            j_tok = energy["conditions"]["energy_j_per_token"]
            pct, ceiling = shares[c]
            out.append(
                f"| {label} | {c} | {m['aggregate_tok_s']:,.1f} | {m['per_request_decode_tok_s']['p50']:.1f} "
                f"| {m['ttft_ms']['p50']:,.0f} / {m['ttft_ms']['p99']:,.0f} | {watts:.0f} | {j_tok:.3f} "
                f"| {pct:.1f} % of {ceiling:,.0f} |"
            )
    return out


if __name__ == "__main__":
    print("\n".join(rows()))
