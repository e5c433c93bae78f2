#!/usr/bin/env bash
# The compiled bench client on the GPU machine (its 16 CPU cores, no GPU work): does its kernel give
# receive stamps (SO_TIMESTAMPNS) and TCP_INFO, does the reader build there, which client does
# `auto` take, and what each client costs per token, thread by thread, against the synthetic server.
# Inputs: GPU=folder with whl/ (the wheels benchmarks/scripts/h200/llama-server/prepare.sh gathers). Writes
# OUT/log.txt.
set -uo pipefail
: "${GPU:?}" "${OUT:?}" "${WORK:=/tmp/h200-compiled}"
export PYTHONPATH="$PWD:$PWD/testkit:$WORK/site" PYTHONUNBUFFERED=1
LOG="$OUT/log.txt"
mkdir -p "$WORK"
step() { echo "== $* ($(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$LOG"; }
step "start on $(hostname), $(nproc) cores, $(uname -sr), $(python3 --version 2>&1)"
[ -d "$WORK/site/uvloop" ] || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --target "$WORK/site" "$GPU"/whl/*.whl 2>&1 | tail -3 | tee -a "$LOG"
step "kernel: receive stamps and TCP_INFO"
python3 benchmarks/scripts/h200/client/kernel-stamps-probe.py 2>&1 | tee -a "$LOG"
step "build the reader: $(command -v cc gcc | tr '\n' ' ')"
python3 setup.py -q build_ext --inplace 2>&1 | tail -5 | tee -a "$LOG"
# setup.py needs a setuptools that reads this pyproject.toml; else the compiler, as setup.py asks it
python3 -c "import rigbook.bench._reader" 2>/dev/null || cc -O2 -std=gnu11 -Wall -shared -fPIC \
  -I"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
  rigbook/bench/_reader.c rigbook/bench/_reader_events.c -lpthread \
  -o "rigbook/bench/_reader$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" 2>&1 | tail -5 | tee -a "$LOG"
python3 -c "from rigbook.bench import clients, compiled
print('built', compiled.available(), 'kernel stamps', compiled.kernel_stamps())
from rigbook.bench.client import Target
print('auto takes', clients.resolve('auto', Target('http://127.0.0.1:1')))" 2>&1 | tee -a "$LOG"
for client in auto python compiled; do
  step "thread_cpu --client $client"
  python3 benchmarks/scripts/client/thread_cpu.py --client "$client" --tokens 800 --window 12 2>&1 | tee -a "$LOG"
done
step "selfbench"
python3 -m rigbook_testkit.selfbench --levels 1,4,64,256 --tokens 600 2>&1 | tee -a "$LOG"
step "end"
