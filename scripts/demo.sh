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
echo "== rigbook bench --profile quick --concurrency 1,4 (one request alone, then four at once)"
"$RB" bench "http://127.0.0.1:$PORT" --profile quick --concurrency 1,4 --requests 4 --recipe "$RECIPE" \
  --out "$OUT/bench.json"
# The seeds' contrast in one line: what one user sees alone against what four users get together.
python3 - "$OUT/bench.json" <<'PY'
import json, sys
cells = {c["concurrency"]: c["metrics"] for c in json.load(open(sys.argv[1]))["cells"]}
one, four = cells[1]["aggregate_tok_s"], cells[4]["aggregate_tok_s"]
each = cells[4]["per_request_decode_tok_s"]["p50"]
print(f"one request alone: {one:.1f} tok/s; four at once: {four:.1f} tok/s together "
      f"({four / one:.2f}x), {each:.1f} tok/s each: llama-server's slots decode the four in one batch, "
      "so the machine serves more in total while each user's own rate falls")
PY
echo "== rigbook report"
"$RB" report "$OUT/bench.json" --format md --out "$OUT/report"
echo "== rigbook down"
"$RB" down "$NAME"
trap - EXIT
echo "demo done: result $OUT/bench.json, report $OUT/report/report.md"
