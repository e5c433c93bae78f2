#!/usr/bin/env bash
# Build llama.cpp's llama-server once, from the llama.cpp sources vendored in the llama-cpp-python
# sdist (the pinned version), into DEST/bin/llama-server. Only the server target is compiled, as a
# static program with no download at build time (no curl, no OpenSSL, no prebuilt web UI); extra
# CMake options (e.g. -DGGML_CUDA=ON) come from LLAMA_SERVER_CMAKE_ARGS.
# Usage: build-llama-server.sh DEST [PYTHON]
set -euo pipefail
DEST="$1"
PYTHON="${2:-python3}"
SDIST="llama-cpp-python==${LLAMA_CPP_VERSION:-0.3.36}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
CMAKE="$(command -v cmake || true)"
if [ -z "$CMAKE" ]; then  # no system CMake: the PyPI one, into a throwaway folder
  "$PYTHON" -m pip install -q --target "$WORK/cmake" cmake ninja
  CMAKE="$WORK/cmake/bin/cmake"
  export PATH="$WORK/cmake/bin:$PATH" PYTHONPATH="$WORK/cmake"
fi
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
"$PYTHON" -m pip download -q --no-deps --no-binary=:all: "$SDIST" -d "$WORK"
tar xzf "$WORK"/llama_cpp_python-*.tar.gz -C "$WORK"
SRC="$(echo "$WORK"/llama_cpp_python-*/vendor/llama.cpp)"
# shellcheck disable=SC2086  # LLAMA_SERVER_CMAKE_ARGS is a list of options
"$CMAKE" -S "$SRC" -B "$WORK/build" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF ${LLAMA_SERVER_CMAKE_ARGS:-} > "$WORK/configure.log"
"$CMAKE" --build "$WORK/build" --target llama-server -j "$(nproc)"
mkdir -p "$DEST/bin"
install -m 755 "$WORK/build/bin/llama-server" "$DEST/bin/llama-server.new"
mv "$DEST/bin/llama-server.new" "$DEST/bin/llama-server"
"$DEST/bin/llama-server" --version 2>&1 | tail -2
