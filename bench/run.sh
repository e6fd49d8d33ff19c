#!/usr/bin/env bash
# make bench: the ingester benchmark (a benchmark, not a test; see docs/benchmarks.md).
#
# Installs its load generator (wrk) and the peers (prometheus-pushgateway, prometheus-alertmanager)
# from Debian when they are missing and this runs as root, then runs bench/ingest/ingest.ts (compiled to dist/bench/ingest/ingest.js by
# `make bench-build`): the webhook, metric, series and data mapping scenarios in one invocation, on
# loopback, servers on CPU 0 and wrk on CPU 1. After them, when those worked: bench/ingest/remote-write.ts
# (1000-point requests into a real Prometheus) and bench/ingest/jetstream.ts (the JetStream hand-off
# against the log sink; needs .tools/bin/nats-server from `make tools`) and bench/destinations/destinations.ts
# (delivery to HTTP and Alertmanager destinations). Each prints its table and
# appends it to BENCH_OUT. Whatever happens, every server it started is stopped on exit (trap).
#
#   BENCH_OUT=FILE          also write the result as markdown to FILE
#   BENCH_PROFILE=SCENARIO  instead: profile the ingester (node --cpu-prof) under one scenario
#                           (single, batch, metric, series, alertmanager, mapped or baseline)
#                           and print the top functions
#   BENCH_SINGLE_ONLY=1     instead: only the single-event scenario (the ingester, the node:http floor and
#                           Alertmanager in turn, medians of BENCH_RUNS), its table and peak RSS, nothing after it
#   BENCH_DURATION, BENCH_WARMUP (seconds), BENCH_CONNECTIONS, BENCH_RUNS: see bench/ingest/ingest.ts
#   BENCH_NO_PUSHGATEWAY=1  run without the Pushgateway comparison even when it is installed
#   BENCH_NO_ALERTMANAGER=1 run without the Alertmanager comparison even when it is installed
#   BENCH_NO_REMOTE_WRITE=1 skip the remote write scenario; BENCH_NO_JETSTREAM=1 skip the JetStream one;
#   BENCH_NO_DESTINATIONS=1 skip the destinations one (BENCH_DESTINATION_EVENTS: events per case, 100000;
#                           BENCH_DESTINATION_CASES, BENCH_DESTINATION_PROFILE: see bench/destinations/destinations.ts)
#   BENCH_NO_STORM=1        skip the alert storm (BENCH_STORM_SECONDS and more: see bench/destinations/alert-storm.ts)
#   BENCH_NO_NOISY_NEIGHBOUR=1 skip the noisy-neighbour one (BENCH_NOISY_DURATION, BENCH_NOISY_RATE,
#                           BENCH_NOISY_SHAPES: see bench/noisy/noisy-neighbour.ts)
#   BENCH_NO_SIGNATURES=1   skip the signature one (BENCH_SIG_DURATION, BENCH_SIG_RUNS: see bench/ingest/signatures.ts)
#   BENCH_NO_TRACING=1      skip the tracing one (BENCH_TRACING_DURATION, BENCH_TRACING_RUNS, BENCH_TRACING_BASE:
#                           see bench/ingest/tracing.ts)
#   BENCH_KEEP=1            keep the work dir (config, logs, wrk output, profiles) afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's pinned Node (node:sqlite and the flags the image uses), as `make bench` gives it,
# also when this script is run directly.
export PATH="$PWD/node_modules/.bin:$PATH"

say() { echo "bench: $*" >&2; }

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
if [ "${BENCH_NO_PUSHGATEWAY:-}" != 1 ]; then
  command -v prometheus-pushgateway >/dev/null 2>&1 || missing+=(prometheus-pushgateway)
fi
if [ "${BENCH_NO_ALERTMANAGER:-}" != 1 ]; then
  command -v prometheus-alertmanager >/dev/null 2>&1 || missing+=(prometheus-alertmanager)
fi
if [ "${BENCH_NO_REMOTE_WRITE:-}" != 1 ]; then
  command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]} from Debian"
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed"
    for pkg in "${missing[@]}"; do
      timeout 300 apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null 2>&1 || say "could not install $pkg"
    done
  else
    say "missing ${missing[*]} (not root, so not installing them)"
  fi
fi
command -v wrk >/dev/null 2>&1 || { say "wrk is required: apt-get install wrk"; exit 1; }
command -v taskset >/dev/null 2>&1 || { say "taskset is required (util-linux)"; exit 1; }
if [ "${BENCH_NO_PUSHGATEWAY:-}" != 1 ] && ! command -v prometheus-pushgateway >/dev/null 2>&1; then
  say "prometheus-pushgateway is not available: running without the Pushgateway comparison"
  export BENCH_NO_PUSHGATEWAY=1
fi
if [ "${BENCH_NO_ALERTMANAGER:-}" != 1 ] && ! command -v prometheus-alertmanager >/dev/null 2>&1; then
  say "prometheus-alertmanager is not available: running without the Alertmanager comparison"
  export BENCH_NO_ALERTMANAGER=1
fi
if [ "$(nproc)" -lt 2 ]; then
  say "needs 2 CPUs (server on CPU 0, load generator on CPU 1); nproc says $(nproc)"
  exit 1
fi
for f in dist/cmd/intake.js dist/bench/ingest/ingest.js dist/bench/ingest/baseline.js; do
  [ -f "$f" ] || { say "$f is missing: run make bench (it builds first)"; exit 1; }
done

BENCH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/intake-bench.XXXXXX")
BENCH_NPROC=$(nproc)
export BENCH_DIR BENCH_NPROC
runner=''
status=1

cleanup() {
  trap - EXIT INT TERM HUP
  if [ -n "$runner" ] && kill -0 "$runner" 2>/dev/null; then
    kill -TERM "$runner" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$runner" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$runner" 2>/dev/null || true
  fi
  # The servers the runner started (it records every pid); normally it has stopped them already.
  if [ -f "$BENCH_DIR/pids" ]; then
    while read -r pid; do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null || true
    done <"$BENCH_DIR/pids"
    sleep 0.5
    while read -r pid; do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    done <"$BENCH_DIR/pids"
  fi
  if [ "${BENCH_KEEP:-}" = 1 ] || [ "$status" != 0 ]; then
    say "work dir kept: $BENCH_DIR"
  else
    rm -rf "$BENCH_DIR"
  fi
}
trap cleanup EXIT
trap 'status=130; exit 130' INT TERM HUP

# The runner itself shares CPU 1 with wrk, away from the servers; the whole run is bounded.
taskset -c 1 timeout --signal=TERM --kill-after=30 1800 node dist/bench/ingest/ingest.js "$@" &
runner=$!
set +e
wait "$runner"
status=$?
set -e
runner=''
# One follow-on benchmark (its own servers, stopped by itself); the first failure is the exit status.
# FOLLOW_ON_LIMIT: its time limit in seconds (default 900).
follow_on() {
  local rc
  taskset -c 1 timeout --signal=TERM --kill-after=30 "${FOLLOW_ON_LIMIT:-900}" node "$@" &
  runner=$!
  set +e
  wait "$runner"
  rc=$?
  set -e
  runner=''
  if [ "$rc" != 0 ]; then
    say "$* failed (exit $rc)"
    [ "$status" = 0 ] && status=$rc
  fi
}
if [ "$status" = 0 ] && [ -z "${BENCH_PROFILE:-}" ] && [ "${BENCH_SINGLE_ONLY:-}" != 1 ] && [ "${BENCH_MAPPED_ONLY:-}" != 1 ]; then
  # Tenants that cannot hurt each other (bench/noisy/noisy-neighbour.ts: tenant B beside tenant A at 10x
  # its limit with a hostile expression; the per-tenant limiter's cost; then the attack shapes, a
  # fresh ingester each, about 25 minutes in all with the defaults).
  if [ "${BENCH_NO_NOISY_NEIGHBOUR:-}" != 1 ]; then
    FOLLOW_ON_LIMIT=3600 follow_on dist/bench/noisy/noisy-neighbour.js
  fi
  # What verifying a sender's signature costs beside Basic (bench/ingest/signatures.ts: alternating runs).
  if [ "${BENCH_NO_SIGNATURES:-}" != 1 ]; then
    follow_on dist/bench/ingest/signatures.js
  fi
  # What tracing costs on the single-event path, off and on (bench/ingest/tracing.ts: alternating runs).
  if [ "${BENCH_NO_TRACING:-}" != 1 ]; then
    follow_on dist/bench/ingest/tracing.js
  fi
  # Remote write to a real Prometheus (bench/ingest/remote-write.ts: points/s end to end, peak RSS).
  if [ "${BENCH_NO_REMOTE_WRITE:-}" != 1 ]; then
    if command -v prometheus >/dev/null 2>&1; then
      follow_on dist/bench/ingest/remote-write.js
    else
      say "prometheus is not available: running without the remote write scenario"
    fi
  fi
  # The JetStream hand-off against the log sink (bench/ingest/jetstream.ts: requests/s, p99, peak RSS).
  if [ "${BENCH_NO_JETSTREAM:-}" != 1 ]; then
    if [ -x .tools/bin/nats-server ]; then
      follow_on dist/bench/ingest/jetstream.js
    else
      say ".tools/bin/nats-server is missing (make tools builds it): running without the JetStream scenario"
    fi
  fi
  # Delivery to destinations (bench/destinations/destinations.ts: HTTP and Alertmanager, from the bus and the outbox).
  if [ "${BENCH_NO_DESTINATIONS:-}" != 1 ] && [ -x .tools/bin/nats-server ]; then
    follow_on dist/bench/destinations/destinations.js
  fi
  # An alert storm against a real Alertmanager (bench/destinations/alert-storm.ts: delivery latency over time, peak RSS).
  if [ "${BENCH_NO_STORM:-}" != 1 ] && [ -x .tools/bin/nats-server ] && command -v prometheus-alertmanager >/dev/null 2>&1; then
    follow_on dist/bench/destinations/alert-storm.js
  fi
fi
exit "$status"
