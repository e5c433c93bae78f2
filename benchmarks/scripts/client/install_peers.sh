#!/usr/bin/env bash
# The two peer clients, pinned, in a throwaway venv (default ~/.cache/rigbook/bench-peers), from the package index.
set -euo pipefail
VENV=${1:-$HOME/.cache/rigbook/bench-peers}
python3 -m venv "$VENV"
"$VENV/bin/pip" install --disable-pip-version-check "guidellm==0.8.1" "llama-benchy==0.4.0"
echo "peers installed in $VENV"
