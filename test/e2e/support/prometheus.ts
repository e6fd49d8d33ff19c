/**
 * A real Prometheus (Debian's /usr/bin/prometheus, 2.42+) on loopback as a remote write receiver:
 * a temporary TSDB, `--web.enable-remote-write-receiver`, and an out-of-order window so two
 * ingester replicas may interleave samples of one series. Installed by `make tools`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onFreePort } from '../../support/ports.js';
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
  /**
   * Scrapes `targets` (loopback `host:port`, at /metrics) every `interval` from now on: the config
   * is rewritten and reloaded (SIGHUP), and this waits until every target was scraped once.
   */
  scrape(targets: readonly string[], interval?: string): Promise<void>;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
  output(): string;
}

export interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

/**
 * The config file: no scrape jobs unless `targets` are given (then everything else came by remote
 * write); with targets, job `intake` scrapes each loopback `host:port` at /metrics every `interval`.
 */
function writeConfig(file: string, targets: readonly string[], interval: string): void {
  const scrape = targets.length
    ? `global: {scrape_interval: ${interval}, evaluation_interval: ${interval}}\n` +
      `scrape_configs:\n  - job_name: intake\n    static_configs: [{targets: ${JSON.stringify(targets)}}]\n`
    : 'global: {}\n';
  writeFileSync(file, `${scrape}storage:\n  tsdb:\n    out_of_order_time_window: 30m\n`);
}

/**
 * `config` replaces the configuration (by default: no scrape jobs, everything in the TSDB came by
 * remote write; `scrape()` later writes one with scrape jobs); `files` are written beside it, where
 * its relative paths (rule_files) find them.
 */
export async function startPrometheus(
  o: { config?: string; files?: Record<string, string> } = {},
): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-prom-'));
  const configFile = join(dir, 'prometheus.yml');
  if (o.config !== undefined) writeFileSync(configFile, o.config);
  else writeConfig(configFile, [], '');
  for (const [name, text] of Object.entries(o.files ?? {})) writeFileSync(join(dir, name), text);
  return onFreePort((port) => startPrometheusOn(port, dir, configFile));
}

async function startPrometheusOn(port: number, dir: string, configFile: string): Promise<Prometheus> {
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
  try {
    await launch();
  } catch (err) {
    await kill();
    throw err;
  }
  return {
    url,
    get pid() {
      return child?.pid;
    },
    writeUrl: `${url}/api/v1/write`,
    scrape: async (targets, interval = '1s') => {
      writeConfig(configFile, targets, interval);
      child?.kill('SIGHUP');
      await waitFor(
        'prometheus scraping its targets',
        async () => {
          const res = await fetch(`${url}/api/v1/targets?state=active`);
          const body = (await res.json()) as {
            data: { activeTargets: Array<{ scrapeUrl: string; health: string }> };
          };
          const scraped = body.data.activeTargets
            .filter((t) => t.health === 'up')
            .map((t) => new URL(t.scrapeUrl).host);
          return targets.every((t) => scraped.includes(t));
        },
        30_000,
        200,
      );
    },
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
