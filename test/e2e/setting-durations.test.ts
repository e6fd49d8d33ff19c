/**
 * Durations in the settings file, through the built ingester: Go-style strings (`timeout: 2s`);
 * the keys of the earlier spelling (`timeoutMs: 2000`) still start it, each with one deprecation
 * warning (on stderr, the operational log) naming the old key and the new one; both spellings with two values, or a value that is
 * no duration, stop it with an error naming the field.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jest } from '@jest/globals';
import { parse, stringify } from 'yaml';
import { ROOT } from '../support/paths.js';
import { EXAMPLE, startIngester, type RunningIngester } from './support/ingester.js';

jest.setTimeout(60_000);

const running: RunningIngester[] = [];
afterAll(async () => {
  for (const i of running) await i.stop();
});

const logLines = (ing: RunningIngester): Array<{ msg?: string; setting?: string; use?: string }> =>
  ing
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; setting?: string; use?: string });

it('starts on the example (every duration a string) without a deprecation', async () => {
  const ing = await startIngester((c) => {
    c.shutdown = { drainDelay: '0s', timeout: '5s' };
    c.deadLetter = { replayLease: '2m' };
  });
  running.push(ing);
  expect(logLines(ing).filter((l) => l.msg?.includes('deprecated'))).toEqual([]);
});

it('reads the old keys, warning once each at start-up with the old and the new key', async () => {
  const ing = await startIngester(
    (c) => {
      c.limits = { ...(c.limits as object), seriesTTL: undefined, seriesTTLSeconds: 90, headersTimeoutMs: 12_000 };
      c.deadLetter = { replayLeaseSeconds: 60 };
    },
    { expectDeprecations: true },
  );
  running.push(ing);
  const warnings = logLines(ing).filter((l) => l.msg?.includes('is deprecated'));
  expect(warnings.map((w) => [w.setting, w.use, w.msg]).sort()).toEqual([
    [
      'deadLetter.replayLeaseSeconds',
      'deadLetter.replayLease',
      'deadLetter.replayLeaseSeconds is deprecated: use deadLetter.replayLease: 1m',
    ],
    [
      'limits.headersTimeoutMs',
      'limits.headersTimeout',
      'limits.headersTimeoutMs is deprecated: use limits.headersTimeout: 12s',
    ],
    [
      'limits.seriesTTLSeconds',
      'limits.seriesTTL',
      'limits.seriesTTLSeconds is deprecated: use limits.seriesTTL: 1m30s',
    ],
  ]);
  expect((await fetch(`${ing.adminUrl}/readyz`)).ok).toBe(true);
});

it.each([
  [
    'both spellings with different values',
    (c: Record<string, unknown>) => void (c.shutdown = { timeoutSeconds: 25, timeout: '10s' }),
    /shutdown\.timeoutSeconds and shutdown\.timeout are both given, with different values \(25 and "10s"\): keep shutdown\.timeout alone/,
  ],
  [
    'a number where a duration goes',
    (c: Record<string, unknown>) => void (c.mapping = { timeout: 500 }),
    /mapping\.timeout: 500 is not a duration: give one with its unit/,
  ],
  [
    'a duration that does not parse',
    (c: Record<string, unknown>) => void (c.deadLetter = { replayLease: '5 minutes' }),
    /deadLetter\.replayLease: invalid duration "5 minutes"/,
  ],
])('refuses to start on %s, naming the field', async (_what, edit, message) => {
  const config = parse(readFileSync(EXAMPLE, 'utf8')) as Record<string, unknown>;
  edit(config);
  const dir = mkdtempSync(join(tmpdir(), 'intake-e2e-durations-'));
  try {
    writeFileSync(join(dir, 'intake.yaml'), stringify(config));
    const run = promisify(execFile)(
      process.execPath,
      [join(ROOT, 'dist/cmd/intake.js'), 'ingester', '--config', join(dir, 'intake.yaml')],
      { timeout: 20_000 },
    );
    const failed = (await run.then(
      () => undefined,
      (err: unknown) => err,
    )) as { code?: number; stderr?: string } | undefined;
    expect(failed?.code).toBe(2); // a configuration error (cmd/intake.ts)
    expect(failed?.stderr).toMatch(message);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
