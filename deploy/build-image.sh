#!/usr/bin/env bash
# Build deploy/Dockerfile (`make image`): with Docker when an engine answers (`docker info`), else with
# podman or buildah in chroot isolation (no daemon, no OCI runtime: RUN steps run under chroot).
#
# Settings (environment; unset means the Dockerfile's production default):
#   SECRAG_IMAGE     the tag (default secrag:latest)
#   PYTHON_IMAGE     the base image (python:3.11-slim-bookworm; deploy/base-image.sh makes a local one)
#   TORCH_INDEX_URL  torch's CPU index (https://download.pytorch.org/whl/cpu; `make install` uses the same)
#   TORCH_WHEELS     a folder holding torch's CPU wheel: linked into deploy/wheels/, used instead of the index
#   SECRAG_BUILD_CA  a CA bundle pip should trust during the build (podman/buildah only; mounted in the
#                    RUN steps, never copied into a layer): for networks that re-sign TLS
# A store snapshot in deploy/snapshot/store.tar (deploy/snapshot/README.md) is baked in: the build verifies it
# and the image's SECRAG_START_FROM names it, so its migrate step loads it once into a fresh store.
# Arguments go to the builder (e.g. --no-cache for a cold build).
set -euo pipefail
cd "$(dirname "$0")/.."

tag=${SECRAG_IMAGE:-secrag:latest}
args=(-f deploy/Dockerfile -t "$tag")
[ -z "${PYTHON_IMAGE:-}" ] || args+=(--build-arg "PYTHON_IMAGE=$PYTHON_IMAGE")
[ -z "${TORCH_INDEX_URL:-}" ] || args+=(--build-arg "TORCH_INDEX_URL=$TORCH_INDEX_URL")
if [ -n "${TORCH_WHEELS:-}" ]; then
    for wheel in "$TORCH_WHEELS"/torch-*.whl; do
        [ -e "$wheel" ] || { echo "build-image: no torch wheel in $TORCH_WHEELS" >&2; exit 1; }
        [ -e "deploy/wheels/${wheel##*/}" ] || ln "$wheel" deploy/wheels/ 2>/dev/null || cp "$wheel" deploy/wheels/
    done
fi
[ ! -e deploy/snapshot/store.tar ] || args+=(--build-arg SNAPSHOT=store.tar)

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    builder=(docker build)
    [ -z "${SECRAG_BUILD_CA:-}" ] || echo "build-image: SECRAG_BUILD_CA is for podman/buildah; ignored by docker" >&2
elif command -v podman >/dev/null || command -v buildah >/dev/null; then
    if command -v podman >/dev/null; then builder=(podman build); else builder=(buildah bud); fi
    builder+=(--isolation chroot --layers --force-rm)  # a failed build leaves no working container
    if [ -n "${SECRAG_BUILD_CA:-}" ]; then
        builder+=(-v "$(realpath "$SECRAG_BUILD_CA"):/etc/ssl/secrag-build-ca.pem:ro")
        args+=(--build-arg PIP_CERT=/etc/ssl/secrag-build-ca.pem)
    fi
else
    echo "build-image: no Docker engine answers and neither podman nor buildah is installed" >&2
    echo "build-image: apt-get install podman (Debian 12), or start Docker" >&2
    exit 1
fi

echo "build-image: ${builder[*]} ${args[*]} $* ."
started=$(date +%s)
nice -n 10 "${builder[@]}" "${args[@]}" "$@" .
echo "build-image: built $tag with ${builder[0]} in $(($(date +%s) - started)) s"
