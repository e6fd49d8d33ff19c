#!/usr/bin/env bash
# Builds the intake image as an OCI archive without Docker or a registry (`make image`):
#   layer 1: the Debian root filesystem of rootfs.sh (libc, libstdc++, ca-certificates, tzdata; no
#            shell, no package manager);
#   layer 2: Node, the binary of the npm `node` package package.json pins (/usr/local/bin/node, as
#            in the node image the Dockerfile starts from);
#   layer 3: /app: package.json, the production node_modules (npm ci --omit=dev) and dist/.
# The same user (65532), entrypoint, command, NODE_ENV, NODE_OPTIONS, MALLOC_MMAP_THRESHOLD_, MALLOC_ARENA_MAX, working directory and ports
# as the Dockerfile. umoci (Debian) assembles the image; GNU tar packs each layer with sorted
# names, numeric root ownership and SOURCE_DATE_EPOCH as the time of every file.
#
# Usage: image/build.sh [OUT] (default build/intake-image.tar; the tag is the package version).
# Needs `npm run build` first (make image does it). Env: SOURCE_DATE_EPOCH (default: the last
# commit's time), IMAGE_TAG, ROOTFS (a rootfs.sh tar to reuse instead of building one).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${1:-$root/build/intake-image.tar}"
: "${SOURCE_DATE_EPOCH:=$(git -C "$root" log -1 --format=%ct)}"
export SOURCE_DATE_EPOCH
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
version="$(node -p "require('$root/package.json').version")"
tag="${IMAGE_TAG:-$version}"
command -v umoci >/dev/null || { echo "image: umoci is missing (make debian-tools installs it)" >&2; exit 1; }
[ -f "$root/dist/cmd/intake.js" ] || { echo "image: dist/ is missing; run npm run build (or make image)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/intake-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

# shellcheck source=image/lib.sh
. "$here/lib.sh"

# 1. root filesystem
rootfs="${ROOTFS:-$work/rootfs.tar}"
[ -f "$rootfs" ] || bash "$here/rootfs.sh" "$rootfs"

# 2. Node: the binary the project's tests run on (node_modules/.bin/node is the npm package's).
node_bin="$(readlink -f "$root/node_modules/node/bin/node")"
[ -x "$node_bin" ] || { echo "image: $root/node_modules/node/bin/node is missing; run npm ci" >&2; exit 1; }
mkdir -p "$work/node/usr/local/bin"
install -m 0755 "$node_bin" "$work/node/usr/local/bin/node"
pack "$work/node" "$work/node.tar"

# 3. the application, laid out as the Dockerfile's /app. The production dependencies are installed
# from the lockfile into a clean directory (no dev dependencies, no install scripts: none of the
# production dependencies has one, and scripts could make the layer differ between builds).
app="$work/app/app"
mkdir -p "$app/dist"
cp "$root/package.json" "$root/package-lock.json" "$app/"
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
rm "$app/package-lock.json"
for d in api cmd common console ingester kube operator; do cp -a "$root/dist/$d" "$app/dist/"; done
chmod -R u+rwX,go+rX,go-w "$work/app"
pack "$work/app" "$work/app.tar"

# Assemble: an OCI layout with one tagged manifest, then a tar of the layout (an "oci-archive").
layout="$work/oci"
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci raw add-layer --image "$layout:$tag" --history.created="$created" --history.created_by="image/rootfs.sh (mmdebstrap: Debian bookworm libc6 libgcc-s1 libstdc++6 ca-certificates tzdata)" "$rootfs"
umoci raw add-layer --image "$layout:$tag" --history.created="$created" --history.created_by="Node $("$node_bin" --version) from the npm node package" "$work/node.tar"
umoci raw add-layer --image "$layout:$tag" --history.created="$created" --history.created_by="intake $version: dist/ and production node_modules" "$work/app.tar"
umoci config --image "$layout:$tag" --no-history --created="$created" --os=linux --architecture=amd64 \
  --config.user=65532:65532 --config.workingdir=/app \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env=NODE_ENV=production --config.env=NODE_OPTIONS=--max-semi-space-size=4 \
  --config.env=MALLOC_MMAP_THRESHOLD_=131072 \
  --config.env=MALLOC_ARENA_MAX=2 \
  --config.entrypoint=node --config.entrypoint=/app/dist/cmd/intake.js \
  --config.cmd=ingester --config.cmd=--help \
  --config.exposedports=8080/tcp --config.exposedports=8081/tcp \
  --config.label=org.opencontainers.image.title=intake \
  --config.label="org.opencontainers.image.version=$version"
umoci gc --layout "$layout"
mkdir -p "$(dirname "$out")"
pack "$layout" "$out.tmp"
mv "$out.tmp" "$out"

manifest="$(node -p "JSON.parse(require('fs').readFileSync('$layout/index.json')).manifests[0].digest")"
size() { du -sb --apparent-size "$1" | cut -f1; }
layers=$(node -e "
  const fs = require('fs');
  const m = JSON.parse(fs.readFileSync('$layout/blobs/' + '$manifest'.replace(':', '/')));
  console.log(m.layers.reduce((n, l) => n + l.size, 0));")
echo "image: $out (tag $tag) in $(( $(date +%s) - start )) s"
echo "image: manifest $manifest; layers $((layers / 1024 / 1024)) MiB compressed, root filesystem $(( ($(stat -c %s "$rootfs") + $(stat -c %s "$work/node.tar") + $(stat -c %s "$work/app.tar")) / 1024 / 1024 )) MiB"
