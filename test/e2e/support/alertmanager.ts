/** A real Prometheus Alertmanager (Debian prometheus-alertmanager) on loopback, for end-to-end tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort, waitFor } from '../../integration/support/cluster.js';

export const ALERTMANAGER = process.env.INTAKE_TEST_ALERTMANAGER ?? '/usr/bin/prometheus-alertmanager';

export interface RunningAlertmanager {
  url: string;
  output: () => string;
  stop: () => Promise<void>;
}

/** Starts Alertmanager with one webhook receiver; groups by alertname and flushes within about a second. */
export async function startAlertmanager(webhook: { url: string; username: string; password: string }): Promise<RunningAlertmanager> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-am-'));
  const config = {
    route: { receiver: 'intake', group_by: ['alertname'], group_wait: '1s', group_interval: '1s', repeat_interval: '1h' },
    receivers: [{ name: 'intake', webhook_configs: [{ url: webhook.url, send_resolved: true, http_config: { basic_auth: { username: webhook.username, password: webhook.password } } }] }],
  };
  writeFileSync(join(dir, 'alertmanager.yml'), stringify(config));
  const port = await freePort();
  const child: ChildProcess = spawn(
    ALERTMANAGER,
    [`--config.file=${join(dir, 'alertmanager.yml')}`, `--storage.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--cluster.listen-address=', '--log.level=debug'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
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
    await waitFor('alertmanager ready', async () => {
      if (child.exitCode !== null) throw new Error(`alertmanager exited: ${out}`);
      return (await fetch(`${url}/-/ready`)).ok;
    }, 20_000, 100);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, output: () => out, stop };
}

/** POST /api/v2/alerts: creates or updates alerts (endsAt in the past resolves them). */
export async function postAlerts(amUrl: string, alerts: Array<{ labels: Record<string, string>; annotations?: Record<string, string>; startsAt?: string; endsAt?: string }>): Promise<void> {
  const res = await fetch(`${amUrl}/api/v2/alerts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(alerts) });
  if (!res.ok) throw new Error(`alertmanager answered ${res.status}: ${await res.text()}`);
}
