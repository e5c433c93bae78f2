#!/usr/bin/env bash
# The embedded CPU recipe, benched like the H200 run (seed profile, 400-token replies,
# concurrency 1/4/8), on this project's two-core development machine. Writes into OUT.
set -euo pipefail
: "${OUT:=benchmarks/runs/$(date -u +%F)-cpu-flow}" "${PORT:=18081}" "${RB:=.venv/bin/rigbook}"
mkdir -p "$OUT"
SLUG=smollm2-135m-instruct-q4-1-on-cpu-llama-cpp
trap '"$RB" down cpu-bench >/dev/null 2>&1 || true' EXIT
"$RB" rig --json --save "$OUT/rig.json" --yes > /dev/null
"$RB" up "$SLUG" --yes --port "$PORT" --name cpu-bench
"$RB" bench "http://127.0.0.1:$PORT" --concurrency 1,4,8 --requests 8 --recipe "$SLUG" --out "$OUT/result.json"
"$RB" report "$OUT/result.json" --format md --out "$OUT/report"
