#!/usr/bin/env bash
# Quality runs on this project's two-core machine: salted needle at the embedded default's largest
# context (2048, from its recipe), the same on CPU vLLM (bf16), and answer agreement between the
# llama.cpp Q4_1 build and the vLLM bf16 build of SmolLM2-135M-Instruct. Writes into OUT.
# VLLM_URL: a CPU vLLM server of the bf16 model (its launch line: benchmarks/runs/2026-12-03-cpu-quality/notes.md).
set -euo pipefail
: "${OUT:=benchmarks/runs/$(date -u +%F)-cpu-quality}" "${PORT:=18452}" "${RB:=.venv/bin/rigbook}"
mkdir -p "$OUT"
: "${VLLM_URL:=http://127.0.0.1:18451}"
SLUG=smollm2-135m-instruct-q4-1-on-cpu-llama-cpp
LLAMA="http://127.0.0.1:$PORT"
trap '"$RB" down "$SLUG" >/dev/null 2>&1 || true' EXIT
"$RB" up "$SLUG" --yes --port "$PORT"
uptime
"$RB" needle "$LLAMA" --context max --recipe "$SLUG" --seed 20261203 --warm \
  --out "$OUT/needle-llamacpp-q4_1-cpu.json"
uptime
"$RB" needle "$VLLM_URL" --context max --seed 20261203 --out "$OUT/needle-vllm-bf16-cpu.json"
uptime
"$RB" agree "$LLAMA" "$VLLM_URL" --n 50 --max-tokens 8 --a-recipe "$SLUG" \
  --out "$OUT/agree-llamacpp-q4_1-vs-vllm-bf16.json"
uptime
for f in "$OUT"/needle-*.json "$OUT"/agree-*.json; do
  "$RB" report "$f" --format md --out "${f%.json}-report"
done
