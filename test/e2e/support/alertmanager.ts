/** A real Prometheus Alertmanager (Debian prometheus-alertmanager) on loopback, for end-to-end tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { onFreePort } from '../../support/ports.js';
import { waitFor } from '../../support/waiting.js';

export const ALERTMANAGER = process.env.INTAKE_TEST_ALERTMANAGER ?? '/usr/bin/prometheus-alertmanager';

export interface RunningAlertmanager {
  url: string;
  port: number;
  output: () => string;
  stop: () => Promise<void>;
  /** kill -9: Alertmanager keeps alerts in memory, so they are gone. */
  kill9: () => Promise<void>;
  /** Its process id (SIGSTOP holds every answer, as a busy or hung Alertmanager would). */
  pid: number | undefined;
}

/**
 * Alertmanager's configuration: with a webhook receiver, every alert to it, grouped by alertname and
 * flushed within about a second; without one, every alert to a receiver that notifies nobody.
 */
export function alertmanagerConfig(webhook?: { url: string; username: string; password: string }): string {
  const config = webhook
    ? {
        route: {
          receiver: 'intake',
          group_by: ['alertname'],
          group_wait: '1s',
          group_interval: '1s',
          repeat_interval: '1h',
        },
        receivers: [
          {
            name: 'intake',
            webhook_configs: [
              {
                url: webhook.url,
                send_resolved: true,
                http_config: { basic_auth: { username: webhook.username, password: webhook.password } },
              },
            ],
          },
        ],
      }
    : { route: { receiver: 'none' }, receivers: [{ name: 'none' }] };
  return stringify(config);
}

/**
 * Alertmanager's command line on loopback `port` (the benchmarks start it pinned with the same).
 * `cluster`: gossip on loopback port `cluster.port` with the Alertmanagers at `cluster.peers`;
 * without it, clustering is off (it would otherwise listen on every interface).
 */
export function alertmanagerArgs(o: {
  configFile: string;
  storage: string;
  port: number;
  cluster?: { port: number; peers: number[] };
  logLevel?: 'debug' | 'info' | 'warn';
}): string[] {
  return [
    `--config.file=${o.configFile}`,
    `--storage.path=${o.storage}`,
    `--web.listen-address=127.0.0.1:${o.port}`,
    ...(o.cluster
      ? [
          `--cluster.listen-address=127.0.0.1:${o.cluster.port}`,
          `--cluster.advertise-address=127.0.0.1:${o.cluster.port}`,
          ...o.cluster.peers.map((p) => `--cluster.peer=127.0.0.1:${p}`),
          // Loopback peers: settle and gossip quickly.
          '--cluster.settle-timeout=2s',
          '--cluster.gossip-interval=50ms',
          '--cluster.pushpull-interval=2s',
        ]
      : ['--cluster.listen-address=']),
    `--log.level=${o.logLevel ?? 'debug'}`,
  ];
}

/**
 * Starts Alertmanager with alertmanagerConfig(webhook) and waits until it is ready. `port`: start
 * on this port (a restart after kill9). `cluster`: gossip with loopback peers (an HA pair), as in
 * alertmanagerArgs.
 */
export async function startAlertmanager(
  webhook?: { url: string; username: string; password: string },
  o: { port?: number; cluster?: { port: number; peers: number[] } } = {},
): Promise<RunningAlertmanager> {
  // A restart keeps its port; a new one takes a free port, another if that one was taken meanwhile.
  if (o.port !== undefined) return startAlertmanagerOn(o.port, webhook, o.cluster);
  return onFreePort((port) => startAlertmanagerOn(port, webhook, o.cluster));
}

async function startAlertmanagerOn(
  port: number,
  webhook: { url: string; username: string; password: string } | undefined,
  cluster: { port: number; peers: number[] } | undefined,
): Promise<RunningAlertmanager> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-am-'));
  writeFileSync(join(dir, 'alertmanager.yml'), alertmanagerConfig(webhook));
  const args = alertmanagerArgs({
    configFile: join(dir, 'alertmanager.yml'),
    storage: join(dir, 'data'),
    port,
    cluster,
  });
  const child: ChildProcess = spawn(ALERTMANAGER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitFor(
      'alertmanager ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`alertmanager exited: ${out}`);
        return (await fetch(`${url}/-/ready`)).ok;
      },
      20_000,
      100,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const kill9 = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await exited;
  };
  return { url, port, output: () => out, stop, kill9, pid: child.pid };
}

/** The alerts Alertmanager holds now (active; resolved ones are not listed). */
export async function activeAlerts(
  amUrl: string,
): Promise<
  Array<{ labels: Record<string, string>; annotations: Record<string, string>; startsAt: string; endsAt: string }>
> {
  const res = await fetch(`${amUrl}/api/v2/alerts?active=true&silenced=true&inhibited=true`);
  if (!res.ok) throw new Error(`alertmanager answered ${res.status}`);
  return (await res.json()) as Array<{
    labels: Record<string, string>;
    annotations: Record<string, string>;
    startsAt: string;
    endsAt: string;
  }>;
}

/** POST /api/v2/alerts: creates or updates alerts (endsAt in the past resolves them). */
export async function postAlerts(
  amUrl: string,
  alerts: Array<{
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    startsAt?: string;
    endsAt?: string;
  }>,
): Promise<void> {
  const res = await fetch(`${amUrl}/api/v2/alerts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(alerts),
  });
  if (!res.ok) throw new Error(`alertmanager answered ${res.status}: ${await res.text()}`);
}
