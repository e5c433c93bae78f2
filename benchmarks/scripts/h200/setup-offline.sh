#!/usr/bin/env bash
# Set up rigbook and a CUDA build of llama.cpp on a GPU machine with no network.
# Inputs (carried to the machine): WHEELS  a folder of wheels for rigbook's
# dependencies; SDIST  llama-cpp-python's source (tarball or unpacked folder).
# Installs into SITE (the caller adds it to PYTHONPATH).
set -euo pipefail
: "${WHEELS:?}" "${SDIST:?}" "${SITE:=/tmp/site}" "${CUDA_ARCH:=90}"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
nvcc --version | tail -2
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target "$SITE" .
# llama.cpp with CUDA for this GPU's architecture only (a build for all
# architectures takes far longer); no multimodal library.
CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF" \
CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  python3 -m pip install -v --no-index --no-deps --no-build-isolation --no-cache-dir --target "$SITE" "$SDIST"
echo "setup done"
