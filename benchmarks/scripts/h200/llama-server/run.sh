#!/usr/bin/env bash
# On one H200 with no network: build llama-server (CUDA) from the vendored llama.cpp, make the
# Llama-3.1-8B-shaped model with random weights, convert it (F16, Q8_0) and quantize it (Q4_K_M)
# with llama.cpp's own tools, run the P2P test and the live NVML reader, then the whole rigbook
# flow per model: rig, check, up, bench (1..64, NVML energy), report, down; then compare.
# With CPU_BUILD=1 it also builds a static CPU-only llama-server for the development machines.
#
# Inputs (prepare.sh gathers them): GPU=folder with src.tar.gz, tok/, whl/. Writes into OUT (at
# most 8 files come back, so each stage packs its folder). Run it again on the same machine and it
# skips what is already built or made; it starts no stage it cannot finish before DEADLINE_S.
set -uo pipefail
: "${GPU:?}" "${OUT:?}" "${WORK:=/tmp/h200}" "${DEADLINE_S:=540}" "${FLOWS:=f16 q8-0 q4-k-m}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export RIGBOOK_HOME="$WORK/home" PYTHONPATH="$PWD:$WORK/site"
REPO=$PWD T0=$(date +%s)
HERE="$REPO/benchmarks/scripts/h200/llama-server"
SRC="$WORK/src/llama_cpp_python-0.3.36/vendor/llama.cpp"
MODELS="$RIGBOOK_HOME/models"
LOG="$OUT/log.txt"
el() { echo $(( $(date +%s) - T0 )); }
say() { echo "[$(el)s] $*" | tee -a "$LOG"; }
left() { [ $(( DEADLINE_S - $(el) )) -gt "$1" ]; }
mkdir -p "$WORK" "$MODELS"
say "start on $(hostname); $(nproc) cores; $(nvidia-smi --query-gpu=name,memory.total,power.limit --format=csv,noheader)"

# 1. rigbook's dependencies and the sources
if [ ! -d "$WORK/site/pydantic" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" "$GPU"/whl/*.whl
  say "wheels installed: rc=$?"
fi
[ -d "$SRC" ] || { mkdir -p "$WORK/src" && tar xzf "$GPU/src.tar.gz" -C "$WORK/src"; say "sources unpacked"; }

# 2. the CUDA build, in the background (about 6 minutes on 16 cores)
BIN="$WORK/build/bin"
if [ ! -x "$BIN/llama-server" ] || [ ! -x "$BIN/llama-quantize" ] || [ ! -x "$BIN/llama-bench" ]; then
  ( cmake -S "$SRC" -B "$WORK/build" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
      -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1 \
    && cmake --build "$WORK/build" --target llama-server llama-quantize llama-bench -j "$(nproc)" >> "$WORK/build.log" 2>&1
    echo "build rc=$? at $(el)s" >> "$WORK/build.log" ) &
  BUILD=$!
  say "build started (pid $BUILD)"
fi

# 2b. a static CPU-only llama-server for the x86-64 development machines (AVX2, no AVX-512), at low
# priority beside the CUDA build; it comes back as one file (the device machine is the fast compiler)
CPUBIN="$WORK/build-cpu/bin/llama-server"
if [ -n "${CPU_BUILD:-}" ] && [ ! -x "$CPUBIN" ]; then
  ( nice -n 15 cmake -S "$SRC" -B "$WORK/build-cpu" -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
      -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_OPENMP=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_EXE_LINKER_FLAGS=-static -s" > "$WORK/build-cpu.log" 2>&1 \
    && nice -n 15 cmake --build "$WORK/build-cpu" --target llama-server -j 4 >> "$WORK/build-cpu.log" 2>&1
    echo "cpu build rc=$? at $(el)s" >> "$WORK/build-cpu.log"
    [ -x "$CPUBIN" ] && xz -T4 -c "$CPUBIN" > "$OUT/llama-server-cpu-static.xz" ) &
  CPUB=$!
fi

# 3. the model, F16 and Q8_0 with convert_hf_to_gguf.py while the build runs
F16="$MODELS/llama-3.1-8b-shape-synthetic-f16.gguf"
Q8="$MODELS/llama-3.1-8b-shape-synthetic-q8-0.gguf"
Q4="$MODELS/llama-3.1-8b-shape-synthetic-q4-k-m.gguf"
if [ ! -f "$F16" ]; then
  python3 "$HERE/make-model.py" "$GPU/tok" "$WORK/hf" 2>&1 | grep -v Warning | tee -a "$LOG"
  python3 "$SRC/convert_hf_to_gguf.py" "$WORK/hf" --outtype f16 --outfile "$F16.part" > "$WORK/convert-f16.log" 2>&1 \
    && mv "$F16.part" "$F16"
  say "convert f16 rc=$? $(stat -c %s "$F16" 2>/dev/null) bytes; $(grep -m1 -o "pre-tokenizer.*\|tokenizer.ggml.pre.*" "$WORK/convert-f16.log")"
fi
if [ ! -f "$Q8" ] && [[ " $FLOWS " == *" q8-0 "* ]]; then
  ( python3 "$SRC/convert_hf_to_gguf.py" "$WORK/hf" --outtype q8_0 --outfile "$Q8.part" > "$WORK/convert-q8.log" 2>&1 \
      && mv "$Q8.part" "$Q8"; echo "convert q8_0 rc=$? at $(el)s" >> "$WORK/convert-q8.log" ) &
  CONV8=$!
fi

# 4. issue 18 item 8: the P2P test and the live NVML reader (SKIP_P2P=1 once it has run)
if [ -z "${SKIP_P2P:-}" ] && [ ! -f "$WORK/p2p-nvml.json" ]; then
  python3 "$HERE/p2p-nvml.py" > "$WORK/p2p-nvml.json" 2> "$WORK/p2p-nvml.err"
  say "p2p-nvml rc=$?"
  python3 -m rigbook rig --p2p-test --yes --json > "$WORK/rig-p2p.json" 2>&1
  tar czf "$OUT/p2p-nvml.tar.gz" -C "$WORK" p2p-nvml.json p2p-nvml.err rig-p2p.json
fi

[ -n "${BUILD:-}" ] && { wait "$BUILD"; say "$(tail -1 "$WORK/build.log")"; }
[ -n "${CONV8:-}" ] && { wait "$CONV8"; say "$(tail -1 "$WORK/convert-q8.log")"; }
[ -n "${CPUB:-}" ] && { wait "$CPUB"; say "$(tail -1 "$WORK/build-cpu.log")"; }
tar czf "$OUT/setup.tar.gz" -C "$WORK" $(cd "$WORK" && ls build.log build-cpu.log convert-*.log 2>/dev/null)
[ -x "$BIN/llama-server" ] || { say "no llama-server: stop"; exit 1; }
export PATH="$BIN:$PATH"
"$BIN/llama-server" --version >> "$LOG" 2>&1

# 5. the whole flow per model
RB="python3 -m rigbook"
[ -f "$WORK/rig.json" ] || $RB rig --json --save "$WORK/rig.json" > /dev/null 2>&1
flow() {  # flow LABEL: rig, check, up, bench, report, down into $WORK/LABEL, packed into $OUT/LABEL.tar.gz
  local label=$1 port=18080 dir="$WORK/$1"
  local recipe="$HERE/recipes/llama-3-1-8b-shape-synthetic-$label-on-1x-h200-llama-server.json"
  mkdir -p "$dir"
  run() { echo "+ $*" >> "$dir/commands.txt"; "$@"; echo "rc=$?" >> "$dir/commands.txt"; }
  cp "$WORK/rig.json" "$dir/"
  run $RB check "$recipe" --json > "$dir/check.json"
  run $RB up "$recipe" --yes --port $port --name "h200-$label" --timeout 300 --json > "$dir/up.json"
  run $RB bench "http://127.0.0.1:$port" --concurrency 1,4,8,16,32,64 --requests 8 --max-tokens 256 \
    --recipe "$recipe" --out "$dir/result.json" --json > "$dir/bench-stdout.json"
  curl -s "http://127.0.0.1:$port/metrics" > "$dir/metrics.txt"
  curl -s "http://127.0.0.1:$port/slots" > "$dir/slots.json"
  nvidia-smi --query-gpu=memory.used,power.draw --format=csv > "$dir/nvidia-smi.csv"
  run $RB report "$dir/result.json" --format md --out "$dir/report"
  run $RB report "$dir/result.json" --format html --out "$dir/report"
  cp "$RIGBOOK_HOME/logs/h200-$label.log" "$dir/engine.log" 2>/dev/null
  run $RB down "h200-$label" --json > "$dir/down.json"
  say "flow $label: $(grep -c 'rc=0' "$dir/commands.txt") of $(grep -c '^rc=' "$dir/commands.txt") steps rc=0"
  tar czf "$OUT/$label.tar.gz" -C "$WORK" "$label" && touch "$WORK/$label.done"
}
for label in $FLOWS; do
  [ -f "$WORK/$label.done" ] && continue
  if [ "$label" = q4-k-m ] && [ ! -f "$Q4" ]; then
    left 150 || { say "no time for q4_k_m"; continue; }
    "$BIN/llama-quantize" "$F16" "$Q4.part" Q4_K_M > "$WORK/quantize-q4.log" 2>&1 && mv "$Q4.part" "$Q4"
    say "quantize q4_k_m rc=$? $(stat -c %s "$Q4" 2>/dev/null) bytes"
    mkdir -p "$WORK/q4-k-m" && cp "$WORK/quantize-q4.log" "$WORK/q4-k-m/"
  fi
  # a label "X-fa" is model X served with flash attention forced on (its recipe adds --flash-attn on)
  [ -f "$MODELS/llama-3.1-8b-shape-synthetic-${label%-fa}.gguf" ] || { say "no model for $label"; continue; }
  left 90 || { say "no time for flow $label"; continue; }
  flow "$label"
done
# 6. compare: each quantized run against the F16 one, with the share of the bandwidth ceiling
mkdir -p "$WORK/compare"
for label in q8-0 q4-k-m; do
  [ -f "$WORK/f16/result.json" ] && [ -f "$WORK/$label/result.json" ] || continue
  $RB compare "$WORK/f16/result.json" "$WORK/$label/result.json" --format md > "$WORK/compare/f16-vs-$label.md" 2>&1
  $RB compare "$WORK/f16/result.json" "$WORK/$label/result.json" --json > "$WORK/compare/f16-vs-$label.json" 2>&1
done
ls -la "$MODELS" > "$WORK/compare/models.txt"
# A real GPU out-of-memory: a KV cache for 4M tokens of context (about 520 GB) on the F16 model;
# --fit off, or llama.cpp would shrink what it may to fit the card.
if [ -f "$F16" ] && left 30 && [ ! -f "$WORK/compare/provoke-gpu-oom.log" ]; then
  timeout 60 "$BIN/llama-server" --model "$F16" --n-gpu-layers 999 --ctx-size 4000000 --fit off --port 18090 \
    > "$WORK/compare/provoke-gpu-oom.log" 2>&1
  echo "exit status $?" >> "$WORK/compare/provoke-gpu-oom.log"
fi
# 7. where a single request's decode time goes (F16 short of 70 % of the ceiling): the card's
# achievable read bandwidth, then llama.cpp's own decode rate without server or HTTP
if [ -f "$F16" ] && left 45 && [ ! -f "$WORK/compare/bandwidth.json" ]; then
  python3 "$HERE/bandwidth-probe.py" > "$WORK/compare/bandwidth.json" 2> "$WORK/compare/bandwidth.err"
  say "bandwidth: $(cat "$WORK/compare/bandwidth.json")"
fi
for fa in 1 0; do
  [ -f "$F16" ] && left 30 && [ ! -f "$WORK/compare/llama-bench-fa$fa.json" ] || continue
  "$BIN/llama-bench" -m "$F16" -ngl 999 -fa "$fa" -p 0 -n 256 -r 3 -o json \
    > "$WORK/compare/llama-bench-fa$fa.json" 2> "$WORK/compare/llama-bench-fa$fa.err"
  say "llama-bench tg256 fa=$fa rc=$?"
done
nvidia-smi --query-gpu=clocks.max.mem,clocks.mem,clocks.sm --format=csv >> "$WORK/compare/models.txt"
tar czf "$OUT/compare.tar.gz" -C "$WORK" compare
say "done"
