#!/usr/bin/env bash
# The main job on the embedded default. Called by `make demo`.
set -euo pipefail
RB="${RIGBOOK_BIN:-rigbook}"
"$RB" recipes list
