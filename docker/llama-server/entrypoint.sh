#!/bin/busybox sh
# rigbook's local llama-server image: env knobs in, llama-server's argv out, the way the seed
# record's image takes MODEL, PORT and its other knobs. `exec` leaves llama-server as the one
# process under docker's init (--init), so `docker stop` reaches it at once.
set -eu
MODEL="${MODEL:-smollm2-135m-instruct}"
case "$MODEL" in
  /*) file="$MODEL" ;;
  *) file="/models/$MODEL.gguf" ;;
esac
set -- --model "$file" --alias "${SERVED_MODEL_NAME:-$MODEL}" \
  --host "${HOST:-0.0.0.0}" --port "${PORT:-8000}" \
  --parallel "${PARALLEL:-4}" --ctx-size "${CTX:-4096}" \
  --cont-batching --metrics --jinja
if [ -n "${THREADS:-}" ]; then set -- "$@" --threads "$THREADS"; fi
# The cache volume (-v VOLUME:/cache) keeps saved slots between runs.
if [ -d /cache ] && [ -w /cache ]; then set -- "$@" --slot-save-path /cache; fi
exec /opt/llama/bin/llama-server "$@"
