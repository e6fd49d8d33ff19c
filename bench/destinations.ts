/**
 * The destinations benchmark (part of make bench): how fast accepted events reach their
 * destination after the hand-off. For each case a fresh built ingester (CPU 0) is sent EVENTS
 * events in 100-event requests (4 at a time) and the time from the first request until the
 * destination has taken the last event is measured: accepting and delivering share the
 * ingester's one core, as they do in production. Cases: an HTTP
 * receiver of our own (one event per request, and batches of 100) and a real Alertmanager, each
 * from the bus (nats-server, JetStream consumers) and from the standalone outbox. The receiver,
 * Alertmanager and nats-server share CPU 1 with this runner.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ROOT } from '../test/support/paths.js';
import { freePort } from '../test/support/ports.js';
import { waitFor } from '../test/support/waiting.js';
import {
  canConnect,
  peakRssMiB,
  pinnedServer,
  runBenchmark,
  BENCH_AUTH,
  BENCH_PASSWORD,
  BENCH_TENANT_LIMITS,
  BENCH_USER,
} from './processes.js';

const EVENTS = Number(process.env.BENCH_DESTINATION_EVENTS ?? 20_000);
const dir = mkdtempSync(join(process.env.BENCH_DIR || tmpdir(), 'intake-bench-dest-'));

/** An HTTP destination that counts events. */
async function receiver(): Promise<{ url: string; count: () => number; close: () => void }> {
  let received = 0;
  const srv: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      received += Array.isArray(body) ? body.length : 1;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hook`, count: () => received, close: () => srv.close() };
}

async function metric(admin: number, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

interface Case {
  name: string;
  queue: 'bus' | 'outbox';
  destination: Record<string, unknown>;
}

async function runCase(c: Case, natsUrl: string): Promise<{ seconds: number; rss: number }> {
  const [port, admin] = [await freePort(), await freePort()];
  const config = {
    listen: `127.0.0.1:${port}`,
    adminListen: `127.0.0.1:${admin}`,
    logLevel: 'warn',
    ...(c.queue === 'bus'
      ? {
          sinks: {
            jetstream: {
              url: natsUrl,
              stream: `BENCH_${c.name.replace(/\W/g, '_')}`,
              subjectPrefix: `bench.${c.name.replace(/\W/g, '_')}`,
              deadLetterSubjectPrefix: `benchdl.${c.name.replace(/\W/g, '_')}`,
              deadLetterStream: `BENCH_DL_${c.name.replace(/\W/g, '_')}`,
              alertBucketPrefix: `bench-${c.name.replace(/\W/g, '-')}`,
            },
          },
        }
      : { spool: { path: join(dir, `${c.name}-spool`) } }),
    destinations: [{ name: 'target', default: true, ...c.destination }],
    tenantLimits: BENCH_TENANT_LIMITS,
    routes: [
      {
        apiVersion: 'intake.dev/v1alpha1',
        kind: 'WebhookIntegration',
        name: 'bench',
        namespace: 'bench',
        credentials: [{ username: BENCH_USER, secret: { plain: BENCH_PASSWORD } }],
      },
    ],
  };
  const file = join(dir, `${c.name.replace(/\W/g, '_')}.yaml`);
  writeFileSync(file, stringify(config));
  const child = pinnedServer(c.name, '0', process.execPath, [
    '--max-semi-space-size=4',
    join(ROOT, 'dist/cmd/intake.js'),
    'ingester',
    '--config',
    file,
  ]);
  try {
    await waitFor(c.name, async () => (await fetch(`http://127.0.0.1:${admin}/readyz`)).ok, 20_000, 100);
    const started = performance.now();
    let next = 0;
    const sender = async (): Promise<void> => {
      for (let sent = next; sent < EVENTS; sent = next) {
        next += 100;
        const body = JSON.stringify(
          Array.from({ length: 100 }, (_, i) => ({
            source: `host-${(sent + i) % 500}`,
            signature: `sig-${sent + i}`,
            severity: 1 + ((sent + i) % 5),
            type: 'Bench',
            description: `event ${sent + i}`,
          })),
        );
        const res = await fetch(`http://127.0.0.1:${port}/events/webhook_bench`, {
          method: 'POST',
          headers: {
            authorization: BENCH_AUTH,
            'content-type': 'application/json',
            'idempotency-key': `${c.name}-${sent}`,
          },
          body,
        });
        if (res.status !== 200) throw new Error(`${c.name}: POST answered ${res.status}`);
      }
    };
    await Promise.all([sender(), sender(), sender(), sender()]);
    await waitFor(
      `${c.name} delivered`,
      async () => (await metric(admin, 'intake_destination_delivered_total{destination="target"}')) >= EVENTS,
      600_000,
      50,
    );
    const seconds = (performance.now() - started) / 1000;
    const rss = peakRssMiB(child.pid);
    return { seconds, rss };
  } finally {
    child.kill('SIGTERM');
  }
}

async function alertmanager(): Promise<{ url: string; start: () => Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  writeFileSync(join(dir, 'am.yml'), stringify({ route: { receiver: 'none' }, receivers: [{ name: 'none' }] }));
  return {
    url,
    start: async () => {
      pinnedServer('alertmanager', '1', 'prometheus-alertmanager', [
        `--config.file=${join(dir, 'am.yml')}`,
        `--storage.path=${join(dir, `am-${port}-${Date.now()}`)}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--cluster.listen-address=',
      ]);
      await waitFor('alertmanager', () => canConnect(port), 20_000, 50);
    },
  };
}

async function main(): Promise<void> {
  const natsPort = await freePort();
  pinnedServer('nats-server', '1', join(ROOT, '.tools/bin/nats-server'), [
    '-a',
    '127.0.0.1',
    '-p',
    String(natsPort),
    '-js',
    '-sd',
    join(dir, 'nats'),
  ]);
  await waitFor('nats-server', () => canConnect(natsPort), 10_000, 100);
  const natsUrl = `nats://127.0.0.1:${natsPort}`;
  const delivery = { backoffMin: '100ms', backoffMax: '500ms', maxAttempts: 1000 };
  const rows: string[] = [];
  for (const queue of ['bus', 'outbox'] as const) {
    for (const batchSize of [1, 100]) {
      const r = await receiver();
      const result = await runCase(
        { name: `http-${batchSize}-${queue}`, queue, destination: { http: { url: r.url, batchSize }, delivery } },
        natsUrl,
      );
      r.close();
      rows.push(
        `| HTTP, batchSize ${batchSize} | ${queue === 'bus' ? 'JetStream consumer' : 'outbox (standalone)'} | ${(EVENTS / result.seconds).toFixed(0)} | ${result.seconds.toFixed(1)} | ${result.rss.toFixed(0)} |`,
      );
    }
    if (process.env.BENCH_NO_ALERTMANAGER !== '1') {
      const am = await alertmanager();
      await am.start();
      const result = await runCase(
        { name: `am-${queue}`, queue, destination: { alertmanager: { urls: [am.url], timeout: '2s' }, delivery } },
        natsUrl,
      );
      rows.push(
        `| Alertmanager (one alert per event) | ${queue === 'bus' ? 'JetStream consumer' : 'outbox (standalone)'} | ${(EVENTS / result.seconds).toFixed(0)} | ${result.seconds.toFixed(1)} | ${result.rss.toFixed(0)} |`,
      );
    }
  }
  const table = [
    `Destinations. Machine: ${process.env.BENCH_NPROC ?? availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}; ingester on CPU 0; receiver, Alertmanager and nats-server on CPU 1. ${EVENTS} events sent in 100-event requests (4 at a time); time from the first request until the destination took the last event; one run each.`,
    '',
    '| destination | queue | events/s accepted and delivered | seconds | ingester peak RSS MiB |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `\n${table}\n`, { flag: 'a' });
}

runBenchmark(main);
