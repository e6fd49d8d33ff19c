/**
 * The alert storm (part of make bench): Alertmanager webhook notifications (100 alerts each,
 * `preset: alertmanager`) at 80% of the rate the ingester accepts them, for STORM_SECONDS, into an
 * ingester (CPU 0) that hands them to a real nats-server and delivers them to a real Alertmanager
 * (both on CPU 1 with this runner). A storm updates the same alerts again and again: 2,000 alerts
 * in 20 groups, each notification one group with a new summary (so every event is new to the
 * bus's duplicate window).
 *
 * First the rate: a fresh ingester without destinations takes notifications from 4 senders for
 * CALIBRATE_SECONDS; the storm is paced at 80% of what it accepted. Then, every LAG_WINDOW_SECONDS,
 * the delivery latency percentiles of that window (accepted -> Alertmanager took it, from the
 * ingester's histogram `intake_destination_delivery_latency_seconds`: a bucket's upper bound),
 * events accepted and delivered, and the ingester's RSS. After the storm, how long the backlog took
 * to drain, and whether every accepted event was delivered (none dead-lettered).
 *
 *   BENCH_STORM_SECONDS (60: long enough for the backlog to build), BENCH_STORM_CALIBRATE_SECONDS (5), BENCH_STORM_SHARE (0.8),
 *   BENCH_STORM_DRAIN_SECONDS (300: the longest wait for the backlog after the storm)
 *   BENCH_STORM_PROFILE=DIR   the storm's ingester runs under --cpu-prof, its profile written to DIR
 *                             (`node dist/bench/support/cpuprofile.js FILE` sums it)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../test/support/ports.js';
import {
  BENCH_AUTH,
  BENCH_TENANT_LIMITS,
  cpuBusyPercent,
  cpuTimes,
  peakRssMiB,
  benchWebhook,
  startPinnedIngester,
  stopProcess,
  processCpuSeconds,
  procStatusKiB,
  runBenchmark,
  stderrTail,
  startAlertmanager,
  startNatsServer,
} from '../support/processes.js';

const STORM_SECONDS = Number(process.env.BENCH_STORM_SECONDS ?? 60);
const CALIBRATE_SECONDS = Number(process.env.BENCH_STORM_CALIBRATE_SECONDS ?? 5);
const SHARE = Number(process.env.BENCH_STORM_SHARE ?? 0.8);
const DRAIN_SECONDS = Number(process.env.BENCH_STORM_DRAIN_SECONDS ?? 300);
const PROFILE_DIR = process.env.BENCH_STORM_PROFILE || undefined;
const LAG_WINDOW_SECONDS = 5;
const GROUPS = 20;
const ALERTS_PER_GROUP = 100;
const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-bench-storm-'));

/** Notification `n`: group n % GROUPS, every alert's summary naming n. */
function notification(n: number): string {
  const group = n % GROUPS;
  const startsAt = new Date(Date.UTC(2026, 10, 26, 0, 0, group)).toISOString();
  return JSON.stringify({
    receiver: 'intake',
    status: 'firing',
    version: '4',
    groupKey: `{}:{alertname="HighCPU",group="${group}"}`,
    externalURL: 'http://alertmanager:9093',
    truncatedAlerts: 0,
    groupLabels: { alertname: 'HighCPU', group: String(group) },
    commonLabels: { alertname: 'HighCPU', job: 'node' },
    commonAnnotations: {},
    alerts: Array.from({ length: ALERTS_PER_GROUP }, (_, i) => ({
      status: 'firing',
      // In the order Alertmanager writes them (a Go map: keys sorted).
      labels: { alertname: 'HighCPU', instance: `web-${group}-${i}:9100`, job: 'node', severity: 'critical' },
      annotations: { summary: `CPU high on web-${group}-${i}, notification ${n}` },
      startsAt,
      endsAt: '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus:9090/graph',
      fingerprint: (0x1000000000000000 + group * ALERTS_PER_GROUP + i).toString(16),
    })),
  });
}

interface Ingester {
  url: string;
  admin: number;
  pid: number;
  said: () => string;
  /** SIGTERM, then the exit (a profile is written on the way out). */
  stop: () => Promise<void>;
}

async function startIngester(name: string, natsUrl: string, amUrl?: string): Promise<Ingester> {
  const [port, admin] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    sinks: {
      jetstream: {
        url: natsUrl,
        stream: `STORM_${name}`,
        subjectPrefix: `storm.${name}`,
        alertBucketPrefix: `storm-${name}`,
      },
    },
    deadLetter: { stream: `STORM_DL_${name}`, subjectPrefix: `stormdl.${name}` },
    tenantLimits: BENCH_TENANT_LIMITS,
    ...(amUrl
      ? {
          destinations: [
            {
              name: 'am',
              default: true,
              alertmanager: { urls: [amUrl] },
              delivery: { backoffMin: '100ms', backoffMax: '1s', maxAttempts: 1000 },
            },
          ],
        }
      : {}),
    routes: [benchWebhook('storm', { mapping: { preset: 'alertmanager' } })],
  };
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, stringify(config));
  const profile = PROFILE_DIR && amUrl ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const child = await startPinnedIngester(`storm ingester ${name}`, file, admin, {
    nodeFlags: ['--max-semi-space-size=4', ...profile],
  });
  return {
    url: `http://127.0.0.1:${port}/events/webhook_storm`,
    admin,
    pid: child.pid as number,
    said: () => stderrTail(child),
    stop: () => stopProcess(child),
  };
}

async function post(url: string, body: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: BENCH_AUTH, 'content-type': 'application/json' },
    body,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`POST answered ${res.status}: ${text.slice(0, 300)}`);
  return (JSON.parse(text) as { response?: { processed?: number } }).response?.processed ?? 0;
}

/** Notifications/s the ingester accepts from 4 senders, without delivering. */
async function calibrate(ing: Ingester): Promise<number> {
  let n = 1_000_000;
  let accepted = 0;
  const until = performance.now() + CALIBRATE_SECONDS * 1000;
  const sender = async (): Promise<void> => {
    while (performance.now() < until) {
      await post(ing.url, notification(n++));
      accepted++;
    }
  };
  await Promise.all([sender(), sender(), sender(), sender()]);
  return accepted / CALIBRATE_SECONDS;
}

/** The admin endpoint's metrics as name{labels} -> value. */
async function metrics(admin: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('intake_destination_')) continue;
    const space = line.lastIndexOf(' ');
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

const BUCKET = /^intake_destination_delivery_latency_seconds_bucket\{.*le="([^"]+)".*\}$/;

/** The p-th percentile of a window from two samples of the latency histogram: a bucket's upper bound. */
function windowPercentile(before: Map<string, number>, after: Map<string, number>, p: number): string {
  const buckets: Array<[number, number]> = [];
  for (const [name, value] of after) {
    const le = BUCKET.exec(name)?.[1];
    if (le === undefined) continue;
    buckets.push([le === '+Inf' ? Infinity : Number(le), value - (before.get(name) ?? 0)]);
  }
  buckets.sort((a, b) => a[0] - b[0]);
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return '-';
  const bound = buckets.find(([, count]) => count >= total * p)?.[0] ?? Infinity;
  return bound === Infinity ? '> 1800 s' : `<= ${bound} s`;
}

const DELIVERED = 'intake_destination_delivered_total{destination="am"}';
const DEAD = /^intake_destination_dead_lettered_total\{destination="am"/;

async function main(): Promise<void> {
  const nats = await startNatsServer(dir);
  const am = await startAlertmanager(dir);
  const [natsUrl, amUrl] = [nats.url, am.url];

  const bare = await startIngester('calibrate', natsUrl);
  const perSecond = await calibrate(bare);
  await bare.stop();
  const rate = perSecond * SHARE;

  const ing = await startIngester('storm', natsUrl, amUrl);
  const rows: string[] = [];
  let accepted = 0;
  let failed = 0;
  let inFlight = 0;
  let skipped = 0;
  const started = performance.now();
  const total = Math.round(rate * STORM_SECONDS);
  // Paced sends, at most 32 at once; a send due while 32 are out is skipped and counted (the
  // ingester did not keep up with the offered rate).
  const pacer = (async () => {
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (inFlight >= 32) {
        skipped++;
        continue;
      }
      inFlight++;
      post(ing.url, notification(i))
        .then((processed) => (accepted += processed))
        .catch(() => failed++)
        .finally(() => inFlight--);
    }
    while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
  })();
  let before = await metrics(ing.admin);
  // Who had the CPU in each window: the ingester (CPU 0), and Alertmanager and nats-server (which
  // share CPU 1 with this runner's senders): a window that delivers less shows which side waited.
  const cpuOf = (): { ing: number; am: number; nats: number; cpus: ReturnType<typeof cpuTimes> } => ({
    ing: processCpuSeconds(ing.pid),
    am: processCpuSeconds(am.child.pid as number),
    nats: processCpuSeconds(nats.child.pid as number),
    cpus: cpuTimes(),
  });
  let cpuBefore = cpuOf();
  let window = 0;
  let stormOver = false;
  void pacer.then(() => (stormOver = true));
  const deadline = started + (STORM_SECONDS + DRAIN_SECONDS) * 1000;
  let drainedAt: number | undefined;
  let peakRss = 0;
  while (performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, LAG_WINDOW_SECONDS * 1000));
    window++;
    const after = await metrics(ing.admin);
    const rss = procStatusKiB(ing.pid, 'VmRSS') / 1024;
    peakRss = Math.max(peakRss, rss);
    const delivered = after.get(DELIVERED) ?? 0;
    const cpuAfter = cpuOf();
    const share = (k: 'ing' | 'am' | 'nats'): string =>
      `${(((cpuAfter[k] - cpuBefore[k]) / LAG_WINDOW_SECONDS) * 100).toFixed(0)}%`;
    rows.push(
      `| ${window * LAG_WINDOW_SECONDS} | ${stormOver ? 'drain' : 'storm'} | ${accepted} | ${delivered} | ${(delivered - (before.get(DELIVERED) ?? 0)) / LAG_WINDOW_SECONDS} | ${windowPercentile(before, after, 0.5)} | ${windowPercentile(before, after, 0.99)} | ${rss.toFixed(0)} | ${share('ing')} | ${share('am')} | ${share('nats')} | ${cpuBusyPercent(cpuBefore.cpus, cpuAfter.cpus, '1').toFixed(0)}% |`,
    );
    before = after;
    cpuBefore = cpuAfter;
    if (stormOver && delivered >= accepted) {
      drainedAt = performance.now();
      break;
    }
  }
  await pacer;
  const last = await metrics(ing.admin);
  const dead = [...last].filter(([name]) => DEAD.test(name)).reduce((sum, [, v]) => sum + v, 0);
  const delivered = last.get(DELIVERED) ?? 0;
  const stormEnd = started + STORM_SECONDS * 1000;
  const rss = peakRssMiB(ing.pid);
  const said = ing.said();
  await ing.stop();
  const table = [
    `Alert storm. Machine: ${process.env.BENCH_NPROC ?? availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(
        ' ',
      )} at the end; ingester on CPU 0; nats-server, Alertmanager and this runner on CPU 1. Intake of notifications (${ALERTS_PER_GROUP} alerts, preset alertmanager, 4 senders, no destination): ${perSecond.toFixed(1)}/s = ${(perSecond * ALERTS_PER_GROUP).toFixed(0)} events/s. Storm: ${(rate * ALERTS_PER_GROUP).toFixed(0)} events/s offered (${(SHARE * 100).toFixed(0)}%) for ${STORM_SECONDS} s over ${GROUPS * ALERTS_PER_GROUP} alerts; ${accepted} events accepted, ${failed} requests failed, ${skipped} sends skipped (32 in flight). Delivered ${delivered} (${dead} dead-lettered); ${drainedAt === undefined ? `NOT drained within ${DRAIN_SECONDS} s after the storm` : `backlog drained ${((drainedAt - stormEnd) / 1000).toFixed(1)} s after the storm ended`}. Ingester peak RSS ${rss.toFixed(0)} MiB. Latency percentiles per ${LAG_WINDOW_SECONDS} s window, from the ingester's histogram (bucket upper bounds).`,
    '',
    '| s | phase | events accepted | delivered | delivered/s in window | latency p50 | latency p99 | ingester RSS MiB | ingester CPU | Alertmanager CPU | nats-server CPU | CPU 1 busy |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
  if (failed > 0) throw new Error(`${failed} storm requests failed\n${said}`);
}

runBenchmark(main);
