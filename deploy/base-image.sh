#!/usr/bin/env bash
# A Python 3.11 base image made from Debian 12's own packages (debootstrap, then podman/buildah
# import), for machines that reach Debian's mirrors but no container registry. Debian's python3 is
# 3.11, like python:3.11-slim-bookworm's; git and ca-certificates are what the runtime stage installs.
#
#   deploy/base-image.sh [IMAGE]        (as root; default localhost/secrag-base:bookworm)
#
# Does nothing when IMAGE exists. DEBIAN_MIRROR names another mirror.
set -euo pipefail

IMAGE=${1:-localhost/secrag-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
TOOL=$(command -v podman || command -v buildah || true)
[ -n "$TOOL" ] || { echo "base-image: podman or buildah is needed (apt-get install podman)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "base-image: apt-get install debootstrap" >&2; exit 1; }

if "$TOOL" image exists "$IMAGE" 2>/dev/null || "$TOOL" inspect --type image "$IMAGE" >/dev/null 2>&1; then
    echo "base-image: $IMAGE exists"
    exit 0
fi

root=$(mktemp -d /var/tmp/secrag-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
started=$(date +%s)
nice -n 10 debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,git \
    bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
# A usable apt in the image (the runtime stage runs apt-get), without the lists and the downloaded .debs.
echo "deb $MIRROR bookworm main" >"$root/etc/apt/sources.list"
rm -rf "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
# Documentation and translations, as Debian's slim images leave them out (about 70 MB).
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
chroot "$root" python3 --version >/dev/null  # Debian 12: Python 3.11
if [ "$(basename "$TOOL")" = podman ]; then
    tar -C "$root" -c . | podman import --quiet --change 'CMD ["python3"]' - "$IMAGE" >/dev/null
else
    tar -C "$root" -c . >"$root.tar"
    buildah from --name secrag-base-import scratch >/dev/null
    buildah add secrag-base-import "$root.tar" / >/dev/null
    buildah config --cmd python3 secrag-base-import
    buildah commit --rm secrag-base-import "$IMAGE" >/dev/null
    rm -f "$root.tar"
fi
echo "base-image: $IMAGE from Debian bookworm's packages in $(($(date +%s) - started)) s ($(du -sh "$root" | cut -f1))"
