#!/usr/bin/env bash
# On one H100 or H200 with no network: issue 37's `rigbook reproduce` of a one-GPU llama-server recipe
# whose claims are the committed F16 run (runs/f16, one H200), and issue 36's speculation run: the same
# F16 model benched at 1, 4 and 16 users alone and with a SmolLM2-135M-shaped drafter at two synthetic
# acceptance lengths, with NVML energy. Engines run in rigbook's bubblewrap sandbox (Debian's bwrap,
# carried as .deb) where it starts; where it does not, the run says so and goes on without it.
#
# Inputs: GPU=folder from prepare.sh plus bwrap.deb; recipes from make-recipes.py. Writes into OUT.
# Run again on the same warm machine and it skips what is built, made or done; it starts no stage it
# cannot finish before DEADLINE_S.
set -uo pipefail
: "${GPU:?}" "${OUT:?}" "${WORK:=/tmp/h200}" "${DEADLINE_S:=560}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export RIGBOOK_HOME="$WORK/home" PYTHONPATH="$PWD:$WORK/site"
REPO=$PWD T0=$(date +%s)
HERE="$REPO/benchmarks/h200/llama-server"
SRC="$WORK/src/llama_cpp_python-0.3.36/vendor/llama.cpp"
MODELS="$RIGBOOK_HOME/models"
LOG="$OUT/log.txt"
el() { echo $(( $(date +%s) - T0 )); }
say() { echo "[$(el)s] $*" | tee -a "$LOG"; }
left() { [ $(( DEADLINE_S - $(el) )) -gt "$1" ]; }
mkdir -p "$WORK" "$MODELS" "$WORK/runs"
say "start on $(hostname); $(nproc) cores; $(nvidia-smi --query-gpu=name,memory.total,power.limit --format=csv,noheader)"

# 1. rigbook's dependencies, the sources, bubblewrap
if [ ! -d "$WORK/site/pydantic" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" "$GPU"/whl/*.whl
  say "wheels installed: rc=$?"
fi
[ -d "$SRC" ] || { mkdir -p "$WORK/src" && tar xzf "$GPU/src.tar.gz" -C "$WORK/src"; say "sources unpacked"; }
[ -x "$WORK/bw/usr/bin/bwrap" ] || dpkg -x "$GPU/bwrap.deb" "$WORK/bw"
export RIGBOOK_BWRAP="$WORK/bw/usr/bin/bwrap"
SANDBOX=()
if ! "$RIGBOOK_BWRAP" --ro-bind / / --dev /dev --unshare-pid true 2> "$WORK/bwrap-probe.err"; then
  SANDBOX=(--allow no-sandbox)
  say "bubblewrap does not start here ($(head -c 200 "$WORK/bwrap-probe.err")): engines run without the sandbox"
else
  say "bubblewrap starts: engines run in the sandbox"
fi

# 2. the CUDA build of llama-server, in the background
BIN="$WORK/build/bin"
if [ ! -x "$BIN/llama-server" ]; then
  ( cmake -S "$SRC" -B "$WORK/build" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
      -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1 \
    && cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >> "$WORK/build.log" 2>&1
    echo "build rc=$? at $(el)s" >> "$WORK/build.log" ) &
  BUILD=$!
  say "build started"
fi

# 3. the models: the 8B-shaped F16 target and the SmolLM2-135M-shaped F16 drafter
F16="$MODELS/llama-3.1-8b-shape-synthetic-f16.gguf"
DRAFT="$MODELS/smollm2-135m-shape-synthetic-f16.gguf"
make_gguf() {  # make_gguf SHAPE OUT.gguf
  [ -f "$2" ] && return
  python3 "$HERE/make-model.py" "$GPU/tok" "$WORK/hf-$1" "$1" 2>&1 | grep -v Warning | tee -a "$LOG"
  python3 "$SRC/convert_hf_to_gguf.py" "$WORK/hf-$1" --outtype f16 --outfile "$2.part" > "$WORK/convert-$1.log" 2>&1 \
    && mv "$2.part" "$2" && rm -rf "$WORK/hf-$1"
  say "convert $1 rc=$? $(stat -c %s "$2" 2>/dev/null) bytes"
}
make_gguf smollm2-135m "$DRAFT"
make_gguf llama-3.1-8b "$F16"
[ -n "${BUILD:-}" ] && { wait "$BUILD"; say "$(tail -1 "$WORK/build.log")"; }
gzip -c "$WORK/build.log" > "$WORK/runs/build.log.gz"
[ -x "$BIN/llama-server" ] || { say "no llama-server: stop"; exit 1; }
export PATH="$BIN:$PATH"
RB="python3 -m rigbook"
[ -f "$WORK/runs/rig.json" ] || $RB rig --json --save "$WORK/runs/rig.json" > /dev/null 2>&1
pack() { tar czf "$OUT/$1.tar.gz" -C "$WORK/runs" "$1" && touch "$WORK/runs/$1.done"; }

# 4. issue 37: reproduce the committed F16 run's claims (1, 4 and 16 users) on this card
CLAIMED="$HERE/recipes/llama-3-1-8b-shape-synthetic-f16-claimed-on-1x-h200-llama-server.json"
if [ ! -f "$WORK/runs/reproduce.done" ] && left 150; then
  mkdir -p "$WORK/runs/reproduce"
  $RB reproduce "$CLAIMED" --yes --port 18080 --name repro --timeout 300 --requests 16 --max-repeats 3 \
    "${SANDBOX[@]}" --out "$WORK/runs/reproduce" > "$WORK/runs/reproduce/stdout.txt" 2> "$WORK/runs/reproduce/stderr.txt"
  say "reproduce rc=$?"; tail -25 "$WORK/runs/reproduce/stdout.txt" | tee -a "$LOG"
  cp "$RIGBOOK_HOME/logs/repro.log" "$WORK/runs/reproduce/engine.log" 2>/dev/null
  pack reproduce
fi

# 5. issue 36: the same bench alone and with the drafter at two acceptance lengths, 1, 4 and 16 users
spec_flow() {  # spec_flow LABEL RECIPE
  local label=$1 recipe=$2 dir="$WORK/runs/$1" port=18081
  [ -f "$WORK/runs/$label.done" ] && return
  left 100 || { say "no time for $label"; return; }
  mkdir -p "$dir"
  run() { echo "+ $*" >> "$dir/commands.txt"; "$@"; echo "rc=$?" >> "$dir/commands.txt"; }
  run $RB up "$recipe" --yes --port $port --name "$label" --timeout 300 "${SANDBOX[@]}" --json > "$dir/up.json"
  run $RB bench "http://127.0.0.1:$port" --concurrency 1,4,16 --requests 16 --max-tokens 256 \
    --recipe "$recipe" --out "$dir/result.json" --json > "$dir/bench-stdout.json"
  curl -s "http://127.0.0.1:$port/metrics" > "$dir/metrics.txt"
  nvidia-smi --query-gpu=memory.used,power.draw --format=csv > "$dir/nvidia-smi.csv"
  run $RB report "$dir/result.json" --format md --out "$dir/report"
  cp "$RIGBOOK_HOME/logs/$label.log" "$dir/engine.log" 2>/dev/null
  run $RB down "$label" --json > "$dir/down.json"
  say "flow $label: $(grep -c 'rc=0' "$dir/commands.txt") of $(grep -c '^rc=' "$dir/commands.txt") steps rc=0"
  pack "$label"
}
spec_flow baseline "$HERE/recipes/llama-3-1-8b-shape-synthetic-f16-on-1x-h200-llama-server.json"
spec_flow spec-3-0 "$HERE/recipes/llama-3-1-8b-shape-synthetic-f16-spec-synth-3-0-on-1x-h200-llama-server.json"
spec_flow spec-1-5 "$HERE/recipes/llama-3-1-8b-shape-synthetic-f16-spec-synth-1-5-on-1x-h200-llama-server.json"
mkdir -p "$WORK/runs/compare"
for label in spec-3-0 spec-1-5; do
  [ -f "$WORK/runs/baseline/result.json" ] && [ -f "$WORK/runs/$label/result.json" ] || continue
  $RB compare "$WORK/runs/baseline/result.json" "$WORK/runs/$label/result.json" --format md \
    > "$WORK/runs/compare/baseline-vs-$label.md" 2>&1
done
cp "$WORK/runs/rig.json" "$WORK/runs/build.log.gz" "$WORK/runs/compare/" 2>/dev/null
tar czf "$OUT/compare.tar.gz" -C "$WORK/runs" compare
say "done"
