/**
 * A per-tenant share above its whole stops the built ingester at startup, with a message naming
 * both fields (such a share would never be what refuses: one tenant could take everything).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ROOT } from '../support/paths.js';
import { freePort } from '../support/ports.js';

const dir = mkdtempSync(join(tmpdir(), 'intake-shares-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function start(settings: Record<string, unknown>): Promise<{ status: number | null; stderr: string }> {
  const file = join(dir, `intake-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    file,
    stringify({
      listen: `127.0.0.1:${await freePort()}`,
      adminListen: `127.0.0.1:${await freePort()}`,
      sinks: { log: { path: join(dir, 'events.log') } },
      deadLetter: { path: join(dir, 'dl.sqlite') },
      routes: [],
      ...settings,
    }),
  );
  const r = spawnSync(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), 'ingester', '--config', file], {
    encoding: 'utf8',
    timeout: 15_000,
  });
  return { status: r.status, stderr: r.stderr };
}

it.each([
  [
    { limits: { maxInFlightBodyBytes: 1048576, maxInFlightBodyBytesPerNamespace: 2097152 } },
    'limits.maxInFlightBodyBytesPerNamespace (2097152) must not exceed limits.maxInFlightBodyBytes (1048576)',
  ],
  [
    { deadLetter: { maxBytes: 1048576, maxBytesPerNamespace: 2097152 } },
    'deadLetter.maxBytesPerNamespace (2097152) must not exceed deadLetter.maxBytes (1048576)',
  ],
  [
    {
      destinations: [
        {
          name: 'pager',
          alertmanager: { urls: ['http://127.0.0.1:9093'], maxAlerts: 100, maxAlertsPerNamespace: 500 },
        },
      ],
    },
    'alertmanager.maxAlertsPerNamespace (500) must not exceed destinations[0] (pager).alertmanager.maxAlerts (100)',
  ],
])('refuses to start with a share above its whole, naming both: %j', async (settings, message) => {
  const r = await start(settings);
  expect(r.status).toBe(2);
  expect(r.stderr).toContain(message);
});
