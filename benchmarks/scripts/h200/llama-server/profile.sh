#!/usr/bin/env bash
# Where a single request's decode time goes on one H200 (issue 17: F16 reached 61 % of the
# 4.8 TB/s ceiling through llama-server). Three readings, one call:
#   1. the card's achievable read bandwidth (bandwidth-probe.py: PyTorch, 16 GB read),
#   2. llama.cpp's own decode rate without the server or HTTP (llama-bench, tg256, one sequence),
#   3. the server's own per-token time for the same model (already in the flow's engine.log).
# Inputs as run.sh (GPU=folder with src.tar.gz, tok/); writes into OUT.
set -uo pipefail
: "${GPU:?}" "${OUT:?}" "${WORK:=/tmp/h200}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
HERE="$PWD/benchmarks/scripts/h200/llama-server"
SRC="$WORK/src/llama_cpp_python-0.3.36/vendor/llama.cpp"
F16="$WORK/llama-3.1-8b-shape-synthetic-f16.gguf"
T0=$(date +%s); say() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/profile.txt"; }
mkdir -p "$WORK"
[ -d "$SRC" ] || { mkdir -p "$WORK/src" && tar xzf "$GPU/src.tar.gz" -C "$WORK/src"; }
( cmake -S "$SRC" -B "$WORK/build" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DCMAKE_BUILD_TYPE=Release \
    > "$WORK/build.log" 2>&1 && cmake --build "$WORK/build" --target llama-bench -j "$(nproc)" >> "$WORK/build.log" 2>&1
  echo "build rc=$?" >> "$WORK/build.log" ) &
BUILD=$!
python3 "$HERE/bandwidth-probe.py" | tee -a "$OUT/profile.txt"
if [ ! -f "$F16" ]; then
  python3 "$HERE/make-model.py" "$GPU/tok" "$WORK/hf" > /dev/null 2>&1
  python3 "$SRC/convert_hf_to_gguf.py" "$WORK/hf" --outtype f16 --outfile "$F16" > "$WORK/convert.log" 2>&1
  say "convert f16 rc=$? $(stat -c %s "$F16") bytes"
fi
wait "$BUILD"; say "$(tail -1 "$WORK/build.log")"
for fa in 1 0; do
  "$WORK/build/bin/llama-bench" -m "$F16" -ngl 999 -fa "$fa" -p 0 -n 256 -r 3 -o json \
    > "$OUT/llama-bench-fa$fa.json" 2> "$OUT/llama-bench-fa$fa.err"
  say "llama-bench tg256 fa=$fa rc=$?: $(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; print(round(r['avg_ts'],1), 'tok/s +-', round(r['stddev_ts'],1))" "$OUT/llama-bench-fa$fa.json" 2>&1)"
done
nvidia-smi --query-gpu=clocks.max.mem,clocks.mem,clocks.sm --format=csv >> "$OUT/profile.txt"
