#!/usr/bin/env bash
# make bench: the ingester benchmark (not a test). Installs its load generator (wrk) and the
# peer (prometheus-pushgateway) from Debian when missing and run as root, then runs every
# scenario in one invocation on loopback. BENCH_OUT=FILE also writes the table as markdown;
# BENCH_ONLY=mapping runs only the data-mapping scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v prometheus-pushgateway >/dev/null || missing+=(prometheus-pushgateway)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  echo "bench: installing ${missing[*]} from Debian" >&2
  (apt-get update -qq && apt-get install -y -qq "${missing[@]}") >/dev/null 2>&1 || echo "bench: could not install ${missing[*]}" >&2
fi
command -v wrk >/dev/null || { echo "bench: wrk is required (apt-get install wrk)" >&2; exit 1; }
exec node dist/bench/ingest.js "$@"
