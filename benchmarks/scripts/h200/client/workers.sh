#!/usr/bin/env bash
# The bench client past one core, on the GPU machine's 16 CPU cores (no GPU work): `selfbench` at
# 256, 1,024 and 2,048 streams x 40 tok/s with 1, 4 and 8 worker processes, and the hot path's
# steps at 64 streams, for a machine other than the two-core development VM.
# Inputs: GPU=folder with whl/ (benchmarks/scripts/h200/llama-server/prepare.sh gathers it). Writes OUT/log.txt.
set -uo pipefail
: "${GPU:?}" "${OUT:?}" "${WORK:=/tmp/h200-client}"
export PYTHONPATH="$PWD:$PWD/testkit:$WORK/site" PYTHONUNBUFFERED=1
LOG="$OUT/log.txt"
mkdir -p "$WORK"
echo "start on $(hostname); $(nproc) cores; load $(cat /proc/loadavg)" | tee -a "$LOG"
[ -d "$WORK/site/uvloop" ] || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --target "$WORK/site" "$GPU"/whl/*.whl 2>&1 | tail -3 | tee -a "$LOG"
python3 benchmarks/scripts/client/hot_path.py --streams 64 --rate 40 --repeat 3 2>&1 | tee -a "$LOG"
python3 -m rigbook_testkit.selfbench --levels 1,4,16,64 --tokens 600 2>&1 | tee -a "$LOG"
for w in 1 4 8; do
  echo "== selfbench --workers $w ($(date -u +%T), load $(cat /proc/loadavg))" | tee -a "$LOG"
  python3 -m rigbook_testkit.selfbench --levels 256,1024,2048 --tokens 600 --workers "$w" 2>&1 | tee -a "$LOG"
done
echo "end $(date -u +%T), load $(cat /proc/loadavg)" | tee -a "$LOG"
