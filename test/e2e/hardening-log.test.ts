/**
 * The log sink under a full disk, a stalled stdout reader and log rotation; and reloads of the
 * standalone file that startup would refuse. All through the built process.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { waitFor } from '../support/waiting.js';
import { basic, DEMO, post, startIngester } from './support/ingester.js';

const AUTH = basic(DEMO.user, DEMO.password);
const event = (marker: string, pad = 300) => ({
  source: 'web-01',
  severity: 3,
  description: `${marker} ${'x'.repeat(pad)}`,
});
const markersIn = (text: string): string[] =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => String((JSON.parse(line) as { description: string }).description).split(' ')[0] as string);

const isRoot = process.getuid?.() === 0;
(isRoot ? describe : describe.skip)('disk full (a 256 KiB tmpfs; runs as root only)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-full-'));
  beforeAll(() => execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir]));
  afterAll(() => {
    execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('acknowledges nothing of a failed write, leaves no partial or rejected line, and logs the failure rarely', async () => {
    const log = join(dir, 'events.log');
    const ing = await startIngester((c) => (c.sinks = { log: { path: log } }));
    try {
      // Leave about 6 KiB free.
      writeFileSync(join(dir, 'filler'), Buffer.alloc(256 * 1024 - 6 * 1024));
      const accepted: string[] = [];
      const refused: string[] = [];
      for (let i = 0; i < 60; i++) {
        const res = await post(`${ing.url}/events/webhook_demo`, [event(`a${i}`), event(`b${i}`)], {
          authorization: AUTH,
        });
        (res.status === 200 ? accepted : refused).push(`a${i}`, `b${i}`);
        if (res.status !== 200) expect(res.status).toBe(503);
      }
      expect(refused.length).toBeGreaterThan(40);
      rmSync(join(dir, 'filler'));
      const after = await post(`${ing.url}/events/webhook_demo`, [event('after')], { authorization: AUTH });
      expect(after.status).toBe(200);
      accepted.push('after');
      // Every line is whole JSON, and the log holds exactly the acknowledged events.
      expect(markersIn(readFileSync(log, 'utf8'))).toEqual(accepted);
      const failures = ing
        .stderr()
        .split('\n')
        .filter((l) => l.includes('event sink failed'));
      expect(failures.length).toBeGreaterThanOrEqual(1);
      expect(failures.length).toBeLessThanOrEqual(3);
      expect(ing.stderr()).not.toMatch(/"stack"/);
    } finally {
      await ing.stop();
    }
  }, 60_000);
});

describe('stdout with a stalled reader', () => {
  it('answers 503 within the write deadline, reports unready, and recovers when the reader resumes', async () => {
    const ing = await startIngester((c) => (c.sinks = { log: { timeout: '500ms' } }), { pauseStdout: true });
    try {
      let status = 200;
      for (let i = 0; i < 400 && status === 200; i++) {
        const started = Date.now();
        status = (await post(`${ing.url}/events/webhook_demo`, [event(`s${i}`, 4000)], { authorization: AUTH })).status;
        expect(Date.now() - started).toBeLessThan(5000);
      }
      expect(status).toBe(503);
      const ready = await fetch(`${ing.adminUrl}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ status: expect.stringMatching(/sink log cannot take events/) });
      ing.resumeStdout();
      await waitFor('ready again', async () => (await fetch(`${ing.adminUrl}/readyz`)).ok, 10_000);
      expect((await post(`${ing.url}/events/webhook_demo`, [event('resumed')], { authorization: AUTH })).status).toBe(
        200,
      );
    } finally {
      ing.resumeStdout();
      await ing.stop();
    }
  }, 60_000);
});

describe('log rotation', () => {
  it('writes to the new file after the old one is renamed (SIGHUP or by itself)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'intake-rotate-'));
    const log = join(dir, 'events.log');
    const ing = await startIngester((c) => (c.sinks = { log: { path: log } }));
    try {
      expect((await post(`${ing.url}/events/webhook_demo`, [event('before')], { authorization: AUTH })).status).toBe(
        200,
      );
      renameSync(log, `${log}.1`);
      ing.child.kill('SIGHUP');
      await waitFor('reopened', async () => existsSync(log), 5000);
      expect((await post(`${ing.url}/events/webhook_demo`, [event('after-hup')], { authorization: AUTH })).status).toBe(
        200,
      );
      // Deleted without a signal: the path is checked every second.
      rmSync(log);
      await waitFor('recreated', async () => existsSync(log), 5000);
      expect(
        (await post(`${ing.url}/events/webhook_demo`, [event('after-delete')], { authorization: AUTH })).status,
      ).toBe(200);
      expect(markersIn(readFileSync(`${log}.1`, 'utf8'))).toEqual(['before']);
      expect(markersIn(readFileSync(log, 'utf8'))).toEqual(['after-delete']);
    } finally {
      await ing.stop();
    }
  });
});

describe('reloading a file startup would refuse', () => {
  it.each([
    ['an empty file', ''],
    ['a scalar', 'hello\n'],
    ['no routes: list', 'listen: 127.0.0.1:8080\n'],
    ['an unknown key', null],
  ])('keeps the current routes when the file becomes %s', async (_what, content) => {
    const ing = await startIngester();
    try {
      const url = `${ing.url}/events/webhook_demo`;
      expect((await post(url, event('x'), { authorization: AUTH })).status).toBe(200);
      const valid = readFileSync(ing.configPath, 'utf8');
      writeFileSync(ing.configPath, content ?? `${valid}\nsurprise: 1\n`);
      await waitFor('reload refused', async () => ing.stderr().includes('routes not reloaded'), 10_000);
      expect(ing.stderr()).not.toMatch(/routing table installed[^\n]*"webhooks":0/);
      expect((await post(url, event('y'), { authorization: AUTH })).status).toBe(200);
    } finally {
      await ing.stop();
    }
  });

  it('still applies a valid change afterwards', async () => {
    const ing = await startIngester();
    try {
      writeFileSync(ing.configPath, '');
      await waitFor('reload refused', async () => ing.stderr().includes('routes not reloaded'), 10_000);
      const dir = mkdtempSync(join(tmpdir(), 'intake-reload-'));
      mkdirSync(dir, { recursive: true });
      const config = {
        routes: [
          {
            apiVersion: 'intake.dev/v1alpha1',
            kind: 'WebhookIntegration',
            name: 'demo',
            namespace: 'default',
            credentials: [{ username: 'demo', secret: { plain: 'new-password' } }],
          },
        ],
      };
      writeFileSync(ing.configPath, stringify(config));
      await waitFor(
        'new password accepted',
        async () =>
          (await post(`${ing.url}/events/webhook_demo`, event('z'), { authorization: basic('demo', 'new-password') }))
            .status === 200,
        10_000,
      );
      expect(
        (await post(`${ing.url}/events/webhook_demo`, event('z'), { authorization: basic('demo', 'new-password') }))
          .status,
      ).toBe(200);
      expect(
        (await post(`${ing.url}/events/webhook_demo`, event('z'), { authorization: basic('demo', 'demo-password') }))
          .status,
      ).toBe(401);
    } finally {
      await ing.stop();
    }
  });
});
