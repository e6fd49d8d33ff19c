/**
 * A real Prometheus (Debian's /usr/bin/prometheus, 2.42+) on loopback as a remote write receiver:
 * a temporary TSDB, `--web.enable-remote-write-receiver`, and an out-of-order window so two
 * ingester replicas may interleave samples of one series. Installed by `make tools`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../support/ports.js';
import { waitFor } from '../../support/waiting.js';

export const PROMETHEUS_BIN = process.env.INTAKE_TEST_PROMETHEUS ?? '/usr/bin/prometheus';

export interface Prometheus {
  url: string;
  /** The current process id (changes on restart). */
  readonly pid: number | undefined;
  writeUrl: string;
  /** Kills it for real (SIGKILL by default) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and data directory. */
  restart(): Promise<void>;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
  output(): string;
}

export interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

/**
 * `config` replaces the configuration (by default: no scrape jobs, everything in the TSDB came by
 * remote write); `files` are written beside it, where its relative paths (rule_files) find them.
 */
export async function startPrometheus(
  o: { config?: string; files?: Record<string, string> } = {},
): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-prom-'));
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(configFile, o.config ?? 'global: {}\nstorage:\n  tsdb:\n    out_of_order_time_window: 30m\n');
  for (const [name, text] of Object.entries(o.files ?? {})) writeFileSync(join(dir, name), text);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let out = '';
  const launch = async (): Promise<void> => {
    const c = spawn(
      PROMETHEUS_BIN,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--web.enable-remote-write-receiver',
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = c;
    c.stdout?.on('data', (d) => (out += d));
    c.stderr?.on('data', (d) => (out += d));
    await waitFor(
      'prometheus ready',
      async () => {
        if (c.exitCode !== null) throw new Error(`prometheus exited: ${out.slice(-2000)}`);
        return (await fetch(`${url}/-/ready`)).ok;
      },
      30_000,
      100,
    );
  };
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    await exited;
  };
  await launch();
  return {
    url,
    get pid() {
      return child?.pid;
    },
    writeUrl: `${url}/api/v1/write`,
    kill,
    restart: launch,
    stop: async () => {
      await kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    output: () => out,
  };
}

/** An instant query, evaluated at `time` (seconds) when given. */
export async function query(prom: Prometheus, promql: string, time?: number): Promise<VectorSample[]> {
  const params = new URLSearchParams({ query: promql });
  if (time !== undefined) params.set('time', String(time));
  const res = await fetch(`${prom.url}/api/v1/query?${params}`);
  const body = (await res.json()) as { status: string; error?: string; data: { result: VectorSample[] } };
  if (body.status !== 'success') throw new Error(`query ${promql}: ${body.error}`);
  return body.data.result;
}
