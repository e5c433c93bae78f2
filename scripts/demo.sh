#!/usr/bin/env bash
# The main job on the embedded default, called by `make demo`:
# up -> smoke -> bench (quick profile) -> report -> down.
# The engine is stopped on every way out, a failed step included.
set -euo pipefail
RB="${RIGBOOK_BIN:-rigbook}"
OUT="${DEMO_OUT:-demo-out}"
PORT="${DEMO_PORT:-}"
mkdir -p "$OUT"
if [ -z "$PORT" ]; then
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi
NAME="demo-$PORT"
# Named outright: an unattended `up --yes` must never pick a GPU recipe by itself.
RECIPE="smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"
trap '"$RB" down "$NAME" >/dev/null 2>&1 || true' EXIT

echo "== rigbook up $RECIPE (the embedded CPU recipe) on port $PORT"
"$RB" up "$RECIPE" --yes --port "$PORT" --name "$NAME"
echo "== rigbook smoke"
"$RB" smoke "http://127.0.0.1:$PORT"
echo "== rigbook bench --profile quick"
"$RB" bench "http://127.0.0.1:$PORT" --profile quick --recipe "$RECIPE" --out "$OUT/bench.json"
echo "== rigbook report"
"$RB" report "$OUT/bench.json" --format md --out "$OUT/report"
echo "== rigbook down"
"$RB" down "$NAME"
trap - EXIT
echo "demo done: result $OUT/bench.json, report $OUT/report/report.md"
