/**
 * Attacks on authentication through the built process: concurrent guesses against a scrypt
 * credential, the timing of failed checks, and spoofed X-Forwarded-For.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { hashScrypt } from '../../api/verifiers.js';
import { ROOT } from '../support/paths.js';
import { median } from '../support/stats.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from './support/ingester.js';

const EVENT = { source: 'web-01', severity: 3 };
const PASSWORD = 'the-right-password';

/** The example config plus integration `slow`, whose password is checked with scrypt (ln=15, as the operator hashes). */
async function withScryptRoute(extra: (c: Record<string, unknown>) => void = () => {}) {
  const phc = await hashScrypt(PASSWORD, randomBytes(16), 15);
  return (c: Record<string, unknown>): void => {
    (c.routes as unknown[]).push({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      name: 'slow',
      namespace: 'team-a',
      credentials: [{ username: 'slow-user', secret: { scrypt: phc } }],
    });
    extra(c);
  };
}

async function metric(adminUrl: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('concurrent guesses against a scrypt credential', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester(
      await withScryptRoute((c) => (c.authThrottle = { failures: 20, window: '1m', block: '1m', failureDelay: '0s' })),
    );
  });
  afterAll(async () => {
    await ing.stop();
  });

  it('hashes no more guesses than the throttle allows, and never answers 200 to a blocked address', async () => {
    const url = `${ing.url}/events/webhook_slow`;
    const guesses = Array.from({ length: 300 }, (_, i) =>
      post(url, EVENT, { authorization: basic('slow-user', `guess-${i}`) }),
    );
    // The right password, sent while the guesses are in flight.
    const right = post(url, EVENT, { authorization: basic('slow-user', PASSWORD) });
    const statuses = (await Promise.all(guesses)).map((r) => r.status);
    // 401 while allowed, 429 once blocked (503 only if this machine is overloaded): never 200.
    expect(statuses.filter((s) => ![401, 429, 503].includes(s))).toEqual([]);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(20);
    expect((await right).status).toBe(429);
    // Failures that ran the hash are counted as invalid credentials: at most the allowance.
    expect(await metric(ing.adminUrl, 'intake_auth_failures_total', 'reason="invalid"')).toBeLessThanOrEqual(20);
  }, 60_000);
});

describe('timing of failed checks', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester(
      await withScryptRoute((c) => (c.authThrottle = { failures: 1000, window: '1m', block: '1m' })),
    );
  });
  afterAll(async () => {
    await ing.stop();
  });

  async function timeOf(name: string, user: string, password: string): Promise<number> {
    const started = performance.now();
    const res = await post(`${ing.url}/events/webhook_${name}`, EVENT, { authorization: basic(user, password) });
    expect(res.status).toBe(401);
    return performance.now() - started;
  }

  it('takes as long for an unknown integration or username as for a wrong scrypt password', async () => {
    // Round-robin, so that a busy machine slows all three alike.
    const times: [number[], number[], number[]] = [[], [], []];
    for (let i = 0; i < 9; i++) {
      times[0].push(await timeOf('nobody', 'slow-user', 'x'));
      times[1].push(await timeOf('slow', 'nobody', 'x'));
      times[2].push(await timeOf('slow', 'slow-user', 'x'));
    }
    const [unknownIntegration, unknownUser, wrongPassword] = times.map(median) as [number, number, number];
    const spread =
      Math.max(unknownIntegration, unknownUser, wrongPassword) -
      Math.min(unknownIntegration, unknownUser, wrongPassword);
    // Before: 0.6 ms, 0.5 ms and 160 ms. Now each waits out the same floor (300 ms by default).
    expect(spread).toBeLessThan(0.25 * wrongPassword);
    expect(unknownIntegration).toBeGreaterThanOrEqual(250);
  }, 60_000);
});

describe('every 401 waits the floor', () => {
  const FLOOR_MS = 250;
  const GH_SECRET = 'a-github-webhook-secret';
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester((c) => {
      (c.routes as unknown[]).push({
        apiVersion: 'intake.dev/v1alpha1',
        kind: 'WebhookIntegration',
        name: 'signed',
        namespace: 'team-s',
        credentials: [],
        authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: GH_SECRET }] } },
      });
      c.authThrottle = { failures: 1000, window: '1m', block: '1m', failureDelay: `${FLOOR_MS}ms` };
    });
  });
  afterAll(async () => {
    await ing.stop();
  });

  const body = JSON.stringify(EVENT);
  const hmac = (secret: string): string => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const cases: Array<[string, string, Record<string, string>]> = [
    ['an unknown integration, no credentials', 'events/webhook_nobody', {}],
    ['an unknown integration, a password', 'events/webhook_nobody', { authorization: basic('nobody', 'x') }],
    ['a Basic integration, no credentials', 'events/webhook_demo', {}],
    ['a Basic integration, a wrong password', 'events/webhook_demo', { authorization: basic(DEMO.user, 'wrong') }],
    ['a signed integration, no signature', 'events/webhook_signed', {}],
    ['a signed integration, a wrong signature', 'events/webhook_signed', { 'x-hub-signature-256': hmac('guess') }],
    ['metrics, no API key', 'v1/integrations/metrics', {}],
    ['metrics, a wrong API key', 'v1/integrations/metrics', { apikey: 'default_not-the-key' }],
  ];

  // Lower bounds only: a loaded machine makes any answer slower, never a floor shorter.
  it.each(cases)('%s: 401 no sooner than failureDelay', async (_what, path, headers) => {
    const started = performance.now();
    const res = await post(`${ing.url}/${path}`, body, headers);
    const tookMs = performance.now() - started;
    expect(res.status).toBe(401);
    // A timer may fire up to a millisecond before the fractional time it was set for.
    expect(tookMs).toBeGreaterThanOrEqual(FLOOR_MS - 2);
  });
});

describe('X-Forwarded-For', () => {
  it.each([['true'], ['1']])('refuses trustProxy %s at startup, naming the safe alternatives', (value) => {
    const r = spawnSync(
      process.execPath,
      [
        join(ROOT, 'dist/cmd/intake.js'),
        'ingester',
        '--config',
        join(ROOT, 'examples/intake.yaml'),
        '--trust-proxy',
        value,
        '--listen',
        '127.0.0.1:0',
        '--admin-listen',
        '127.0.0.1:0',
      ],
      { encoding: 'utf8', timeout: 15_000 },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/trustProxy: .*addresses or CIDRs/);
  });

  it('with a trusted proxy, refuses a forwarded address that is not an IP or is too long, and blocks by the real client address', async () => {
    const ing = await startIngester((c) => {
      c.trustProxy = '127.0.0.1';
      c.authThrottle = { failures: 3, window: '1m', block: '1m', failureDelay: '0s' };
    });
    try {
      const url = `${ing.url}/events/webhook_demo`;
      const good = basic('demo', 'demo-password');
      const garbage = await post(url, EVENT, { authorization: good, 'x-forwarded-for': 'a'.repeat(15_000) });
      expect(garbage.status).toBe(400);
      expect(garbage.json()).toMatchObject({ code: 'BAD_HEADER', errors: [{ field: 'header:x-forwarded-for' }] });
      expect((await post(url, EVENT, { authorization: good, 'x-forwarded-for': 'not-an-ip' })).status).toBe(400);
      // The client behind the trusted proxy (this test, on 127.0.0.1) is 192.0.2.7; prepending addresses does not change it.
      for (let i = 0; i < 4; i++)
        await post(url, EVENT, { authorization: basic('demo', 'wrong'), 'x-forwarded-for': '192.0.2.7' });
      const spoofed = await post(url, EVENT, {
        authorization: good,
        'x-forwarded-for': `198.51.100.${Math.floor(Math.random() * 200)}, 192.0.2.7`,
      });
      expect(spoofed.status).toBe(429);
      expect((await post(url, EVENT, { authorization: good, 'x-forwarded-for': '192.0.2.8' })).status).toBe(200);
    } finally {
      await ing.stop();
    }
  });
});
