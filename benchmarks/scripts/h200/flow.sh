#!/usr/bin/env bash
# The whole flow on one GPU, after setup-offline.sh and place-model.sh:
# rig, check, up, bench at 1/4/8 with telemetry, report, down. Writes into OUT.
# Keeps going past a failed step so every reading that can be taken is taken.
set -uo pipefail
: "${OUT:?}" "${SLUG:=smollm2-135m-instruct-q4-1-on-1x-h200-llama-cpp-cuda}" "${PORT:=18080}"
# NVLink multicast stays off on shared hosts; rigbook's launcher passes these on.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export RIGBOOK_HOME="${RIGBOOK_HOME:-/tmp/rigbook-home}"
RB="python3 -m rigbook"
mkdir -p "$OUT/extra"
run() { echo "+ $*" >&2; "$@"; echo "rc=$?" >&2; }
run nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,clocks.max.sm --format=csv
run $RB rig --json --save "$OUT/rig.json" > "$OUT/extra/rig-stdout.json"
run $RB check "$SLUG" --json > "$OUT/extra/check-h200.json"; cat "$OUT/extra/check-h200.json"
run $RB check glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3 --json > "$OUT/extra/check-seed.json"
run $RB rig --p2p-test --yes --json > "$OUT/extra/rig-p2p.json"
run $RB plan "$SLUG" --port "$PORT" > "$OUT/extra/plan.txt"
run $RB up "$SLUG" --yes --port "$PORT" --json | tee "$OUT/extra/up.json"
run $RB status --json > "$OUT/extra/status.json"
run $RB bench "http://127.0.0.1:$PORT" ${BENCH_ARGS:---concurrency 1,4,8 --requests 16} --recipe "$SLUG" --out "$OUT/result.json" --json > "$OUT/extra/bench-stdout.json"
tail -c 3000 "$OUT/extra/bench-stdout.json"
run $RB report "$OUT/result.json" --format md --out "$OUT/report"
run $RB report "$OUT/result.json" --format html --out "$OUT/report"
cp "$RIGBOOK_HOME"/logs/*.log "$OUT/extra/" 2>/dev/null || find "$RIGBOOK_HOME" -name '*.log' -exec cp {} "$OUT/extra/" \;
run $RB down --all
cp "$OUT"/*.journal.jsonl "$OUT/extra/" 2>/dev/null; rm -f "$OUT"/*.journal.jsonl
tar czf "$OUT/extra.tar.gz" -C "$OUT" extra && rm -rf "$OUT/extra"
ls -la "$OUT" "$OUT/report"
