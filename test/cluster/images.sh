#!/usr/bin/env bash
# Builds the test node's images as OCI archives in bin/images/, the same way as the intake image
# (image/build.sh): umoci over layers packed by image/lib.sh, on image/rootfs.sh's Debian base.
#   pause         registry.k8s.io/pause:3.10   the sandbox process (bin/pause, static; no base)
#   coredns       intake.local/coredns:test    bin/coredns
#   nats          intake.local/nats:test       .tools/bin/nats-server (the pinned JetStream server)
#   alertmanager  intake.local/alertmanager:test  Debian's prometheus-alertmanager binary
# Rebuilt when a binary changes. Prints "NAME ARCHIVE REF" lines for node-start.sh to import.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
: "${SOURCE_DATE_EPOCH:=$(git -C "$root" log -1 --format=%ct)}"
export SOURCE_DATE_EPOCH
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
# shellcheck source=../../image/lib.sh
. "$root/image/lib.sh"
out="$here/bin/images"
mkdir -p "$out"

# The base root filesystem, built once per version of its scripts.
base="$out/rootfs.tar"
base_key=$(cat "$root/image/rootfs.sh" "$root/image/rootfs-hook.sh" | sha256sum | cut -d' ' -f1)
if ! [ -f "$base" ] || [ "$(cat "$base.key" 2>/dev/null)" != "$base_key" ]; then
  bash "$root/image/rootfs.sh" "$base" >&2
  echo "$base_key" > "$base.key"
fi

# image NAME REF-NAME TAG USER BINARY DEST BASE? ENTRYPOINT-ARGS...
image() {
  local name=$1 ref=$2 tag=$3 user=$4 binary=$5 dest=$6 with_base=$7; shift 7
  local archive="$out/$name.tar"
  local key
  key=$( (sha256sum "$binary" "$here/images.sh" "$root/image/lib.sh"; echo "$base_key $with_base $* ${EXTRA:-}") | sha256sum | cut -d' ' -f1)
  if [ -f "$archive" ] && [ "$(cat "$archive.key" 2>/dev/null)" = "$key" ]; then
    echo "$name $archive $ref:$tag"; return
  fi
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/intake-testcluster-image.XXXXXX")
  mkdir -p "$work/layer$(dirname "$dest")"
  install -m 0755 "$binary" "$work/layer$dest"
  # Files the binary reads from the host's package (EXTRA: space-separated directories).
  for d in ${EXTRA:-}; do mkdir -p "$work/layer$(dirname "$d")"; cp -a "$d" "$work/layer$d"; done
  pack "$work/layer" "$work/layer.tar"
  umoci init --layout "$work/oci"
  umoci new --image "$work/oci:$tag"
  if [ "$with_base" = base ]; then
    umoci raw add-layer --image "$work/oci:$tag" --history.created="$created" --history.created_by="image/rootfs.sh" "$base"
  fi
  umoci raw add-layer --image "$work/oci:$tag" --history.created="$created" --history.created_by="$dest" "$work/layer.tar"
  local entry=()
  for a in "$@"; do entry+=("--config.entrypoint=$a"); done
  umoci config --image "$work/oci:$tag" --no-history --created="$created" --os=linux --architecture=amd64 \
    --config.user="$user" "${entry[@]}"
  umoci gc --layout "$work/oci"
  pack "$work/oci" "$archive.tmp"
  mv "$archive.tmp" "$archive"
  echo "$key" > "$archive.key"
  rm -rf "$work"
  echo "$name $archive $ref:$tag"
}

alertmanager=/usr/bin/prometheus-alertmanager
[ -x "$alertmanager" ] || { echo "testcluster: $alertmanager is missing (make debian-tools)" >&2; exit 1; }
[ -x "$root/.tools/bin/nats-server" ] || { echo "testcluster: .tools/bin/nats-server is missing (make tools)" >&2; exit 1; }
image pause registry.k8s.io/pause 3.10 65535:65535 "$here/bin/pause" /pause none /pause
image coredns intake.local/coredns test 65532:65532 "$here/bin/coredns" /coredns base /coredns
image nats intake.local/nats test 65532:65532 "$root/.tools/bin/nats-server" /nats-server base /nats-server
# Debian's build reads its default notification templates from the package's share directory.
EXTRA=/usr/share/prometheus/alertmanager image alertmanager intake.local/alertmanager test 65532:65532 "$alertmanager" /alertmanager base /alertmanager
