#!/usr/bin/env bash
# make bench: the ingester benchmark (not a test). Installs its load generator (wrk) and the
# peer (prometheus-pushgateway) from Debian when missing and run as root, then runs every
# scenario in one invocation on loopback. BENCH_OUT=FILE also writes the table as markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v prometheus-pushgateway >/dev/null || missing+=(prometheus-pushgateway)
command -v prometheus >/dev/null || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  echo "bench: installing ${missing[*]} from Debian" >&2
  (apt-get update -qq && apt-get install -y -qq "${missing[@]}") >/dev/null 2>&1 || echo "bench: could not install ${missing[*]}" >&2
fi
command -v wrk >/dev/null || { echo "bench: wrk is required (apt-get install wrk)" >&2; exit 1; }
node dist/bench/ingest.js "$@"
# Remote write to a real Prometheus (Debian prometheus, installed by make tools).
node dist/bench/remote-write.js
