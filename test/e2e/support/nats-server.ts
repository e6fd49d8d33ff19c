/**
 * A real nats-server with JetStream (.tools/bin/nats-server, built by `make tools`) on a free
 * loopback port with a temporary store, for end-to-end tests: killed with SIGKILL and restarted on
 * the same port and store to simulate a bus outage.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NodeConnectionOptions } from '@nats-io/transport-node';
import { ROOT } from '../../support/paths.js';
import { onFreePort } from '../../support/ports.js';
import { waitFor } from '../../support/waiting.js';

export const NATS_SERVER = join(ROOT, '.tools/bin/nats-server');

export interface RunningNats {
  url: string;
  port: number;
  storeDir: string;
  /** kill -9: no chance to flush or say goodbye. */
  kill9(): Promise<void>;
  /** Starts again on the same port with the same store. */
  restart(): Promise<void>;
  /** Stops the server and removes its store. */
  stop(): Promise<void>;
}

/** `config`: extra nats-server configuration (e.g. an authorization block). */
export async function startNats(o: { config?: string } = {}): Promise<RunningNats> {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing; run make tools`);
  return onFreePort((port) => startNatsOn(port, o));
}

async function startNatsOn(port: number, o: { config?: string }): Promise<RunningNats> {
  const storeDir = mkdtempSync(join(tmpdir(), 'intake-nats-'));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let log = '';
  const launch = async (): Promise<void> => {
    log = '';
    let args = ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir];
    if (o.config) {
      const file = join(storeDir, 'nats.conf');
      writeFileSync(
        file,
        `listen: "127.0.0.1:${port}"\njetstream { store_dir: ${JSON.stringify(storeDir)} }\n${o.config}\n`,
      );
      args = ['-c', file];
    }
    const proc = spawn(NATS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout?.on('data', (d) => (log += d));
    proc.stderr?.on('data', (d) => (log += d));
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    child = proc;
    await waitFor(
      'nats-server ready',
      async () => {
        if (proc.exitCode !== null) throw new Error(`nats-server exited: ${log}`);
        return log.includes('Server is ready');
      },
      15_000,
      20,
    );
  };
  const kill = async (signal: NodeJS.Signals): Promise<void> => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  try {
    await launch();
  } catch (err) {
    await kill('SIGKILL');
    rmSync(storeDir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    kill9: () => kill('SIGKILL'),
    restart: launch,
    stop: async () => {
      await kill('SIGKILL');
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

export interface StoredEvent {
  /** The message's Nats-Msg-Id (a message holds one event or a request's events). */
  msgId: string;
  /** The message's stream sequence. */
  seq: number;
  subject: string;
  event: Record<string, unknown>;
}

/** Every event in the stream (each message split into its events), read with an ordered consumer. */
export async function readStream(
  url: string,
  stream: string,
  auth: Partial<NodeConnectionOptions> = {},
): Promise<StoredEvent[]> {
  const nc = await connect({ servers: url, ...auth });
  try {
    const jsm = await jetstreamManager(nc);
    const total = (await jsm.streams.info(stream)).state.messages;
    const out: StoredEvent[] = [];
    if (total === 0) return out;
    const consumer = await jetstream(nc).consumers.get(stream);
    let read = 0;
    while (read < total) {
      const batch = await consumer.fetch({ max_messages: Math.min(1000, total - read), expires: 5000 });
      let got = 0;
      for await (const m of batch) {
        got++;
        for (const line of m.string().split('\n')) {
          if (line === '') continue;
          out.push({
            msgId: m.headers?.get('Nats-Msg-Id') ?? '',
            seq: m.seq,
            subject: m.subject,
            event: JSON.parse(line) as Record<string, unknown>,
          });
        }
      }
      read += got;
      if (got === 0) throw new Error(`stream ${stream}: read ${read} of ${total} messages, then nothing`);
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** Counts how often each value occurs. */
export function tally(values: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

/** A metric's value from the ingester's /metrics (no labels), or undefined when absent. */
export async function metricValue(adminUrl: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** Ingester config edit: JetStream hand-off to `nats` with test-sized intervals, a spool when given. */
export function handoffConfig(
  nats: RunningNats,
  o: {
    spoolDir?: string;
    spoolMaxBytes?: number;
    /** One namespace's share of the spool (the ingester's default is a quarter of maxBytes). */
    spoolMaxBytesPerNamespace?: number;
    jetstream?: Record<string, unknown>;
  } = {},
): (c: Record<string, unknown>) => void {
  return (c) => {
    c.sinks = { jetstream: { url: nats.url, timeout: '500ms', reconnectWait: '100ms', ...o.jetstream } };
    if (o.spoolDir)
      c.spool = {
        path: o.spoolDir,
        replayBackoffMin: '50ms',
        replayBackoffMax: '500ms',
        ...(o.spoolMaxBytes ? { maxBytes: o.spoolMaxBytes } : {}),
        ...(o.spoolMaxBytesPerNamespace ? { maxBytesPerNamespace: o.spoolMaxBytesPerNamespace } : {}),
      };
  };
}

/**
 * Waits until the ingester's dead letters on the bus are open. /readyz says the ingester can take
 * events; the dead-letter stream is set up just after (on a busy machine its first try may time
 * out and is repeated 2 s later). Until then a mapping failure is answered 503 (its payload cannot
 * be kept) and an event a destination refused comes back to be delivered again.
 */
export async function untilDeadLettersOpen(adminUrl: string): Promise<void> {
  await waitFor(
    'the dead-letter list answering',
    async () => (await fetch(`${adminUrl}/deadletter?limit=1`)).ok,
    30_000,
    100,
  );
}
