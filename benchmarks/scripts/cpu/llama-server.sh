#!/usr/bin/env bash
# The embedded default (llama.cpp's llama-server, 4 slots) benched like the vLLM CPU run in
# benchmarks/runs/2026-12-03-cpu-vllm (profile quick, 48-token replies, concurrency 1/4/8/16, one wave per level),
# so `rigbook compare` sets like against like. Writes into OUT.
set -euo pipefail
: "${OUT:=benchmarks/runs/$(date -u +%F)-cpu-llama-server}" "${PORT:=18084}" "${RB:=.venv/bin/rigbook}"
mkdir -p "$OUT"
SLUG=smollm2-135m-instruct-q4-1-on-cpu-llama-cpp
trap '"$RB" down cpu-llama-server-bench >/dev/null 2>&1 || true' EXIT
uptime > "$OUT/load.txt"
"$RB" up "$SLUG" --yes --port "$PORT" --name cpu-llama-server-bench
uptime >> "$OUT/load.txt"
"$RB" bench "http://127.0.0.1:$PORT" --profile quick --concurrency 1,4,8,16 --requests 2 \
  --recipe "$SLUG" --out "$OUT/result.json"
uptime >> "$OUT/load.txt"
"$RB" report "$OUT/result.json" --format md --out "$OUT/report"
