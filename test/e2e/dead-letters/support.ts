/** Routes, payloads and admin calls shared by the dead-letter end-to-end tests. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../support/paths.js';
import { post, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { adminPost } from '../../support/admin.js';

/** A mapping that needs `host`; payloads carry `hostname`, so each one fails until FIXED is loaded. */
export const BROKEN = { expression: '{"source": host, "severity": level}' };
export const FIXED = { expression: '{"source": hostname, "severity": level}' };

export const integration = (name: string, namespace: string, mapping: Record<string, unknown> = BROKEN) =>
  tenantRoute(name, namespace, { mapping });

export const sendAs = (ing: RunningIngester, name: string, body: unknown, query = '') =>
  post(`${ing.url}/events/webhook_${name}${query}`, body, tenantAuth(name));

export interface Listed {
  store: string;
  count: number;
  bytes: number;
  namespaces: Record<string, number>;
  entries: Array<{
    id: string;
    kind: string;
    namespace: string;
    integration: string;
    payload?: unknown;
    event?: Record<string, unknown>;
    destination?: string;
  }>;
}

export async function listLetters(ing: RunningIngester, query = ''): Promise<Listed> {
  const res = await fetch(`${ing.adminUrl}/deadletter?payload=true${query ? `&${query}` : ''}`);
  if (!res.ok) throw new Error(`GET /deadletter: ${res.status} ${await res.text()}`);
  return (await res.json()) as Listed;
}

export interface ReplayReport {
  replayed: number;
  failed: number;
  skipped: number;
  results: Array<{ id: string; result: string; message?: string }>;
}

export async function replay(ing: RunningIngester, query = ''): Promise<ReplayReport> {
  const res = await fetch(`${ing.adminUrl}/deadletter/replay${query ? `?${query}` : ''}`, adminPost());
  if (!res.ok) throw new Error(`POST /deadletter/replay: ${res.status} ${await res.text()}`);
  return (await res.json()) as ReplayReport;
}

const execFileAsync = promisify(execFile);
export const cli = (args: string[]) => execFileAsync(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), ...args]);

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
}
