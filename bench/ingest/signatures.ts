/**
 * What verifying a signature costs (part of make bench, after the ingester benchmark; alone:
 * `make bench-build && node dist/bench/ingest/signatures.js`): single events through one built ingester
 * on CPU 0, wrk (one thread, bench/ingest/signed.lua) on CPU 1, three integrations measured alternately,
 * run by run, so a loaded machine slows them alike:
 *   - basic: HTTP Basic (a sha256 verifier, as the operator publishes generated passwords);
 *   - github: an X-Hub-Signature-256 HMAC-SHA256 over the body (no timestamp, no id);
 *   - standard-webhooks: webhook-id, webhook-timestamp, webhook-signature, each request with its
 *     own id signed beforehand by the reference library (so none is answered from the seen-message cache).
 * The cost is the ingester's own CPU time per request (user + system, from /proc, over each run),
 * which a loaded machine disturbs far less than throughput does (a neighbour takes the core away,
 * it does not make our work bigger); the table also gives throughput and latency. Then the check
 * alone, in this process on the same routes: the Basic check (sha256 verifier) against each
 * signature check (headers, then the HMAC over the body), microseconds per call.
 *
 *   BENCH_SIG_DURATION  seconds per run (default 5); BENCH_SIG_RUNS  runs per target (default 3)
 *   BENCH_SIG_WARMUP    seconds of warm-up per target (default 2); BENCH_CONNECTIONS (32)
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { stringify } from 'yaml';
import { sha256Hex } from '../../api/verifiers.js';
import { ROOT } from '../../test/support/paths.js';
import { freePort } from '../../test/support/ports.js';
import { median } from '../../test/support/stats.js';
import { createHmac } from 'node:crypto';
import type { Route } from '../../api/route.js';
import { readSignedHeaders, signatureMatches } from '../../ingester/auth/signature-check.js';
import { newVerifiedCache } from '../../ingester/routing/credentials.js';
import { RouteTable } from '../../ingester/routing/route-table.js';
import {
  BENCH_AUTH,
  BENCH_PASSWORD,
  BENCH_TENANT_LIMITS,
  BENCH_USER,
  ingesterReady,
  pinnedIngester,
  processCpuSeconds,
  runBenchmark,
  BENCH_EVENT,
} from '../support/processes.js';

const DURATION_S = Number(process.env.BENCH_SIG_DURATION ?? 5);
const RUNS = Number(process.env.BENCH_SIG_RUNS ?? 3);
const WARMUP_S = Number(process.env.BENCH_SIG_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
/**
 * Distinct Standard Webhooks requests per run: more than one loaded core answers (ids repeat only
 * past 10,000 requests/s, and would then be answered from the seen-message cache, flattering the figure).
 */
const SIGNED_REQUESTS_PER_RUN = 10_000 * Math.max(DURATION_S, WARMUP_S);
const GITHUB_SECRET = 'bench-github-secret';
const SW_SECRET = 'whsec_' + Buffer.alloc(32, 5).toString('base64');
const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-bench-signatures-'));
const log = (m: string): void => void process.stderr.write(`bench: ${m}\n`);

const EVENT = BENCH_EVENT;

const route = (name: string, extra: Record<string, unknown>) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'bench',
  credentials: [],
  ...extra,
});

const ROUTES = [
  route('basic', { credentials: [{ username: BENCH_USER, secret: { sha256: sha256Hex(BENCH_PASSWORD) } }] }),
  route('github', {
    authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: GITHUB_SECRET }] } },
  }),
  route('standard-webhooks', {
    authentication: { mode: 'signature', signature: { scheme: 'standard-webhooks', secrets: [{ value: SW_SECRET }] } },
  }),
];

interface Run {
  rps: number;
  p50: number;
  p99: number;
  /** The ingester's CPU time per answered request, µs. */
  cpuUs: number;
  /** The ingester's CPU use over the run, % of one core (about 100: saturated; less: the load generator was the limit). */
  cpuPercent: number;
}

/** The headers file of a target: one line for Basic and GitHub, fresh distinct signed requests for Standard Webhooks. */
function headersFile(target: string, requests: number): string {
  const file = join(dir, `${target}.headers`);
  if (target === 'basic') writeFileSync(file, `Authorization: ${BENCH_AUTH}\n`);
  else if (target === 'github')
    writeFileSync(
      file,
      `X-Hub-Signature-256: sha256=${createHmac('sha256', GITHUB_SECRET).update(EVENT).digest('hex')}\n`,
    );
  else {
    const wh = new Webhook(SW_SECRET);
    const now = new Date();
    const ts = String(Math.floor(now.getTime() / 1000));
    const run = `${Date.now().toString(36)}`;
    const lines: string[] = [];
    for (let i = 0; i < requests; i++) {
      const id = `msg_${run}_${i}`;
      lines.push(`webhook-id: ${id}\twebhook-timestamp: ${ts}\twebhook-signature: ${wh.sign(id, now, EVENT)}`);
    }
    writeFileSync(file, `${lines.join('\n')}\n`);
  }
  return file;
}

async function wrk(port: number, target: string, seconds: number, eventsFile: string, pid: number): Promise<Run> {
  const headers = headersFile(target, SIGNED_REQUESTS_PER_RUN);
  const args = ['-c', '1', 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '5s', '--latency'];
  args.push('-s', join(ROOT, 'bench/ingest/signed.lua'), `http://127.0.0.1:${port}/events/webhook_${target}`);
  const env = { ...process.env, WRK_BODY_FILE: join(dir, 'event.json'), WRK_HEADERS_FILE: headers };
  const cpuBefore = processCpuSeconds(pid);
  const child = spawn('taskset', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  const cpuSeconds = processCpuSeconds(pid) - cpuBefore;
  appendFileSync(join(dir, 'wrk.txt'), `### ${target} ${seconds}s\n${out}\n`);
  truncateSync(eventsFile, 0);
  const json = /^WRKJSON (\{.*\})$/m.exec(out)?.[1];
  if (code !== 0 || !json) throw new Error(`wrk against ${target} failed (exit ${code}):\n${out}`);
  const r = JSON.parse(json) as Record<string, number>;
  if ((r.status as number) > 0) throw new Error(`wrk: ${r.status} answers from ${target} were not 200:\n${out}`);
  return {
    rps: (r.requests as number) / ((r.duration_us as number) / 1e6),
    p50: (r.p50_us as number) / 1000,
    p99: (r.p99_us as number) / 1000,
    cpuUs: (cpuSeconds * 1e6) / (r.requests as number),
    cpuPercent: (cpuSeconds / ((r.duration_us as number) / 1e6)) * 100,
  };
}

/** The checks alone, µs per call (median of 5 rounds), on the benchmark's own routes. */
async function checkUs(): Promise<Record<string, number>> {
  const { table } = RouteTable.build(
    ROUTES.map((route) => ({ route: route as Route, source: 'bench' })),
    { allowPlaintext: true },
  );
  const body = Buffer.from(EVENT);
  const cache = newVerifiedCache();
  const time = async (n: number, check: () => unknown): Promise<number> => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await check();
    return Number(process.hrtime.bigint() - start) / n / 1000;
  };
  const signed = (name: string, headers: string[]) => {
    const sig = table.webhook(name)?.signature;
    if (!sig) throw new Error(`route ${name} is not signed`);
    return () => {
      const read = readSignedHeaders(sig.rule, headers, Date.now());
      if (typeof read === 'string' || !signatureMatches(sig, read, body, Date.now()))
        throw new Error(`${name}: refused`);
    };
  };
  const ghHeader = createHmac('sha256', GITHUB_SECRET).update(EVENT).digest('hex');
  const now = new Date();
  const swHeaders = [
    'webhook-id',
    'msg_check',
    'webhook-timestamp',
    String(Math.floor(now.getTime() / 1000)),
    'webhook-signature',
    new Webhook(SW_SECRET).sign('msg_check', now, EVENT),
  ];
  const checks: Record<string, () => unknown> = {
    basic: async () => {
      if (!(await table.authenticateWebhook('basic', BENCH_USER, BENCH_PASSWORD, cache)))
        throw new Error('basic: refused');
    },
    github: signed('github', ['x-hub-signature-256', `sha256=${ghHeader}`]),
    'standard-webhooks': signed('standard-webhooks', swHeaders),
  };
  const out: Record<string, number> = {};
  for (const [name, check] of Object.entries(checks)) {
    await time(20_000, check);
    const rounds: number[] = [];
    for (let i = 0; i < 5; i++) rounds.push(await time(50_000, check));
    out[name] = median(rounds);
  }
  return out;
}

async function main(): Promise<void> {
  const [port, admin] = [await freePort(), await freePort()];
  const eventsFile = join(dir, 'events.log');
  writeFileSync(eventsFile, '');
  writeFileSync(join(dir, 'event.json'), EVENT);
  const configFile = join(dir, 'intake.yaml');
  writeFileSync(
    configFile,
    stringify({
      listen: `127.0.0.1:${port}`,
      adminListen: `127.0.0.1:${admin}`,
      logLevel: 'warn',
      sinks: { log: { path: eventsFile } },
      tenantLimits: BENCH_TENANT_LIMITS,
      routes: ROUTES,
    }),
  );
  const server = pinnedIngester('ingester', configFile);
  const pid = server.pid as number;
  await ingesterReady('ingester', server, admin, 30_000);
  const targets = ['basic', 'github', 'standard-webhooks'];
  const loadBefore = loadavg();
  for (const t of targets) await wrk(port, t, WARMUP_S, eventsFile, pid);
  const runs = new Map<string, Run[]>(targets.map((t) => [t, []]));
  for (let i = 0; i < RUNS; i++)
    for (const t of targets) {
      const r = await wrk(port, t, DURATION_S, eventsFile, pid);
      log(
        `${t}: run ${i + 1}/${RUNS}: ${r.rps.toFixed(0)} requests/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`,
      );
      runs.get(t)?.push(r);
    }
  const loadAfter = loadavg();
  const checks = await checkUs();
  const med = (t: string, k: keyof Run): number => median((runs.get(t) ?? []).map((r) => r[k]));
  const basicCpu = med('basic', 'cpuUs');
  const rows = targets.map((t) => {
    const cpu = med(t, 'cpuUs');
    const row = [t, med(t, 'rps').toFixed(0), med(t, 'p50').toFixed(2), med(t, 'p99').toFixed(2)];
    row.push(med(t, 'cpuPercent').toFixed(0), cpu.toFixed(0));
    row.push((cpu / basicCpu).toFixed(3), (checks[t] as number).toFixed(2));
    return `| ${row.join(' | ')} |`;
  });
  const table = [
    `### Signature verification vs Basic (single events, ${CONNECTIONS} connections, medians of ${RUNS} alternating ${DURATION_S} s runs)`,
    '',
    `Load average (1, 5, 15 min) before: ${loadBefore.map((l) => l.toFixed(2)).join(', ')}; after: ${loadAfter.map((l) => l.toFixed(2)).join(', ')} (${cpus().length} cores).`,
    '',
    '| integration | requests/s | p50 ms | p99 ms | ingester CPU % | ingester CPU µs per request | vs basic | the check alone, µs |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  process.stdout.write(`${table}\n`);
  if (process.env.BENCH_OUT) appendFileSync(process.env.BENCH_OUT, `${table}\n`);
}

runBenchmark(main);
