/**
 * Noisy neighbour on the dead letter: tenant A posts unmappable 1 MB payloads
 * (4 at a time) while tenant B posts valid events one after another; prints B's refusals and
 * latency, and whether B's own dead letter survived. Standalone ingester, no bus, no spool.
 *
 *   node bench/noisy/dead-letter-flood.ts [--dist DIR] [--payloads N] [--old-config]
 *
 * --dist runs another build (e.g. an earlier commit's dist/); --old-config writes the settings an
 * earlier version understands (deadLetter.path and maxBytes only).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const dist = resolve(arg('--dist') ?? 'dist');
const payloads = Number(arg('--payloads') ?? 100);
const oldConfig = process.argv.includes('--old-config');

const freePort = (): Promise<number> =>
  new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });

const route = (name: string, namespace: string, expression: string) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace,
  credentials: [{ username: name, secret: { plain: `${name}-password` } }],
  mapping: { expression },
});
const auth = (name: string): string => `Basic ${Buffer.from(`${name}:${name}-password`).toString('base64')}`;
/** Status 0: the connection was reset or the request failed (counted like a refusal). */
const send = async (url: string, name: string, body: unknown): Promise<{ status: number; id: string | null }> => {
  try {
    const res = await fetch(`${url}/events/webhook_${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: auth(name) },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    return { status: res.status, id: res.headers.get('x-intake-dead-letter-id') };
  } catch {
    return { status: 0, id: null };
  }
};

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-bench-dl-'));
  const [port, adminPort] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${adminPort}`,
    logLevel: 'warn',
    sinks: { log: { path: join(dir, 'events.jsonl') } },
    deadLetter: oldConfig
      ? { path: join(dir, 'deadletter.sqlite'), maxBytes: 64 * 1024 * 1024 }
      : { path: join(dir, 'deadletter.sqlite') },
    routes: [
      route('flood', 'team-a', '{"source": host}'),
      route('steady', 'team-b', '{"source": hostname, "severity": level}'),
      route('quiet', 'team-b', '{"source": host}'),
    ],
  };
  writeFileSync(join(dir, 'intake.yaml'), JSON.stringify(config));
  const child = spawn(
    process.execPath,
    [join(dist, 'cmd/intake.js'), 'ingester', '--config', join(dir, 'intake.yaml')],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const url = `http://127.0.0.1:${port}`;
  const admin = `http://127.0.0.1:${adminPort}`;
  try {
    for (let i = 0; ; i++) {
      if ((await fetch(`${admin}/readyz`).catch(() => undefined))?.ok) break;
      if (i > 200) throw new Error('ingester not ready');
      await new Promise((r) => setTimeout(r, 50));
    }
    const quiet = await send(url, 'quiet', { hostname: 'b', level: 1 });
    const blob = 'x'.repeat(1_000_000);
    let next = 0;
    let flooding = true;
    const aStatuses: number[] = [];
    const worker = async (): Promise<void> => {
      while (next < payloads) {
        const n = next++;
        aStatuses.push((await send(url, 'flood', { hostname: 'a', n, blob })).status);
      }
    };
    const flood = Promise.all([worker(), worker(), worker(), worker()]).then(() => void (flooding = false));
    const started = performance.now();
    const latencies: number[] = [];
    const statuses = new Map<number, number>();
    while (flooding) {
      const t0 = performance.now();
      const r = await send(url, 'steady', { hostname: `b-${latencies.length}`, level: 2 });
      latencies.push(performance.now() - t0);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      await new Promise((r2) => setTimeout(r2, 10));
    }
    await flood;
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const pct = (p: number): string =>
      (latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))] ?? 0).toFixed(1);
    const ok = statuses.get(200) ?? 0;
    const listed = (await (await fetch(`${admin}/deadletter`)).json()) as { entries: Array<{ id: string }> };
    const survived = listed.entries.some((e) => e.id === quiet.id);
    const a = new Map<number, number>();
    for (const s of aStatuses) a.set(s, (a.get(s) ?? 0) + 1);
    process.stdout.write(
      `${oldConfig ? 'old config' : 'new config'} ${dist}\n` +
        `  tenant A: ${payloads} x 1 MB unmappable in ${seconds.toFixed(1)} s, answers ${JSON.stringify(Object.fromEntries(a))}\n` +
        `  tenant B: ${latencies.length} requests, answers ${JSON.stringify(Object.fromEntries(statuses))}, not 200: ${(100 * (1 - ok / latencies.length)).toFixed(1)}%\n` +
        `  tenant B latency ms: p50 ${pct(50)} p90 ${pct(90)} p99 ${pct(99)} max ${(latencies.at(-1) ?? 0).toFixed(1)}\n` +
        `  tenant B's own dead letter ${quiet.id} survived: ${survived}\n`,
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
