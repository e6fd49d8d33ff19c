/**
 * The Alertmanager destination's own cost per alert, in one process, without the queue: the
 * dispatcher, the alert states (the standalone SQLite store) and the POSTs, delivering the
 * destinations benchmark's events (each a new alert) to a real Alertmanager on CPU 1, as a
 * queue would hand them out (maxInFlight at a time, each acknowledged after its POST). Prints the
 * CPU microseconds of this process per alert and the wall clock, for comparing builds quickly;
 * `--cpu-prof` on the node command line profiles it.
 *
 * usage (after make bench-build): taskset -c 0 node dist/bench/destinations/alertmanager-path.js [alerts] [rounds]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { parseEvents } from '../../ingester/core/event.js';
import { AlertmanagerDestination } from '../../ingester/destinations/alertmanager/alertmanager-destination.js';
import { Dispatcher, type Delivery } from '../../ingester/destinations/dispatcher.js';
import { parseStored } from '../../ingester/destinations/destination.js';
import { DestinationMetrics } from '../../ingester/destinations/metrics.js';
import { SqliteAlertStores } from '../../ingester/destinations/alertmanager/sqlite-alert-store.js';
import { processCpuSeconds, runBenchmark, startAlertmanager } from '../support/processes.js';
import { destinationEvent } from './destination-events.js';

const ALERTS = Number(process.argv[2] ?? 30_000);
const ROUNDS = Number(process.argv[3] ?? 3);

/** The stored JSON of events first..first+n-1, as the sinks store them. */
function storedEvents(first: number, n: number): string[] {
  const ctx = { namespace: 'bench', integration: 'bench', receivedAtMs: Date.now() };
  return parseEvents(
    Array.from({ length: n }, (_, i) => destinationEvent(first + i)),
    n,
    ctx,
  ).map((e) => JSON.stringify(e));
}

async function round(url: string, first: number, amPid: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-am-path-'));
  try {
    const db = new DatabaseSync(join(dir, 'outbox.sqlite'));
    db.exec('PRAGMA journal_mode = WAL');
    db.close();
    const stores = new SqliteAlertStores(dir);
    const store = stores.store('target');
    const metrics = new DestinationMetrics(new Registry());
    const logger = pino({ level: 'warn' });
    const settings = {
      urls: [url],
      resendIntervalMs: 3_600_000,
      resolvedRetentionMs: 900_000,
      resolveAfterMs: 0,
      timeoutMs: 120_000,
      maxAlertsPerNamespace: 10 * ALERTS,
      maxAlerts: 10 * ALERTS,
    };
    const am = new AlertmanagerDestination('target', settings, () => store, metrics, logger, 'bench');
    const delivery = {
      maxAttempts: 10,
      backoffMinMs: 100,
      backoffMaxMs: 500,
      maxInFlight: 1024,
      maxInFlightBytes: 16 * 1024 * 1024,
    };
    const dispatcher = new Dispatcher(am, delivery, metrics, logger);
    const texts: string[] = [];
    for (let from = first; from < first + ALERTS; from += 100) texts.push(...storedEvents(from, 100));
    let acked = 0;
    let finished: () => void = () => undefined;
    const allAcked = new Promise<void>((resolve) => (finished = resolve));
    const deliveryOf = (json: string): Delivery => {
      let parsed: ReturnType<typeof parseStored> | undefined;
      return {
        json,
        namespace: 'bench',
        attempt: 1,
        event: () => (parsed ??= parseStored(json)),
        ack: async () => {
          if (++acked === ALERTS) finished();
        },
        retry: async (_ms, error) => {
          throw new Error(`a delivery failed: ${error}`);
        },
        deadLetter: async (_reason, error) => {
          throw new Error(`a delivery was refused: ${error}`);
        },
        hold: async () => {
          throw new Error('a delivery was held');
        },
      };
    };
    const cpu = process.cpuUsage();
    const amBefore = processCpuSeconds(amPid);
    const started = performance.now();
    for (let i = 0; i < texts.length; i += 100) {
      await dispatcher.waitForRoom(100);
      for (const json of texts.slice(i, i + 100)) dispatcher.submit(deliveryOf(json));
    }
    await allAcked;
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const amCpu = processCpuSeconds(amPid) - amBefore;
    await dispatcher.idle();
    await am.close();
    stores.close();
    const us = (used.user + used.system) / ALERTS;
    return `${(ALERTS / seconds).toFixed(0)} alerts/s, ${us.toFixed(1)} µs of this process's CPU per alert (${(1e6 / us).toFixed(0)} per CPU-s), Alertmanager ${(ALERTS / amCpu).toFixed(0)} alerts per its CPU-s`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-am-path-am-'));
  const { url, child } = await startAlertmanager(dir);
  try {
    for (let r = 0; r < ROUNDS; r++)
      process.stdout.write(`round ${r + 1}: ${await round(url, r * ALERTS, child.pid as number)}\n`);
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

runBenchmark(main);
