#!/usr/bin/env bash
# Builds the images' base root filesystem as a tar with mmdebstrap: Debian bookworm's libc,
# libgcc, libstdc++, ca-certificates and tzdata, extracted (no maintainer scripts, no dpkg, no apt,
# no shell), util-linux's chrt alone, and /etc/passwd with the nonroot user 65532 (rootfs-hook.sh).
# Usage: rootfs.sh OUT.tar. Needs root (or user namespaces) and the Debian mirror.
#
# SOURCE_DATE_EPOCH (default: the last commit's time) makes mmdebstrap clamp every timestamp, so
# the tar depends only on the packages' versions: two builds against the same mirror state are
# identical. The mirror moves when Debian publishes a point release or a security fix.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
: "${SOURCE_DATE_EPOCH:=$(git -C "$here" log -1 --format=%ct)}"
export SOURCE_DATE_EPOCH
: "${DEBIAN_MIRROR:=http://deb.debian.org/debian}"
: "${DEBIAN_SECURITY_MIRROR:=http://deb.debian.org/debian-security}"
packages=libc6,libgcc-s1,libstdc++6,ca-certificates,tzdata

command -v mmdebstrap >/dev/null || { echo "image: mmdebstrap is missing (make debian-tools installs it)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
nice -n 15 mmdebstrap --quiet --mode=root --variant=extract --format=tar --architectures=amd64 \
  --include="$packages" \
  --extract-hook="bash '$here/rootfs-hook.sh' \"\$1\"" \
  bookworm "$out.tmp" \
  "deb $DEBIAN_MIRROR bookworm main" \
  "deb $DEBIAN_MIRROR bookworm-updates main" \
  "deb $DEBIAN_SECURITY_MIRROR bookworm-security main"
mv "$out.tmp" "$out"
