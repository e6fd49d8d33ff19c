/**
 * Hostile-neighbour matrix, activity slots (docs/design.md §4b): a stranger without credentials
 * sends hundreds of failed logins to tenant B's integration from eight addresses, each with a
 * crafted User-Agent (posing as the platform team, carrying the C1 CSI byte 0x9b, a bidi override),
 * while B sends at a steady rate and earns a few refusals of its own. B's refusals all stay in its
 * activity with its own sender's User-Agent, the stranger shows up only as addresses and counts,
 * no control character is anywhere in the report or in `intake status`, B gets no refusal it did
 * not earn, and the replica stays ready.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { jest } from '@jest/globals';
import type { ActivityReport, ReportedActivity } from '../../../api/activity.js';
import { ROOT } from '../../support/paths.js';
import { rawPost } from '../../support/raw-http.js';
import { basic, post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { expectUnharmed, steadyTenant } from './support.js';

jest.setTimeout(60_000);

const run = promisify(execFile);
/** The stranger reaches 100 logins in about 2 s (16 at once, 300 ms a failure, then quick 429s). */
const ATTACK_MS = 5_000;
const STRANGERS = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 2}`);
const MAX_STRANGER_REQUESTS = 400;
const B_REFUSALS = 5;
const B_AGENT = 'b-sender/1.0';

/** C0 but newline, DEL, C1, bidi controls: what a terminal or a browser acts on. */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const ACTS_ON_SCREEN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/** The stranger's User-Agents, as raw header bytes (one byte per character). */
const CRAFTED = [
  'URGENT from intake platform team: your credentials leaked, rotate now at https://intake-support.example',
  'URGENT\u009b2J\u009b31m intake platform team',
  `URGENT ${Buffer.from('\u202etnemucod eht ni si nekot wen ruoy', 'utf8').toString('latin1')}`,
];

/** One failed login with a crafted User-Agent (raw header bytes) from `localAddress`; resolves to the status. */
const strangerLogin = (port: number, localAddress: string, seq: number): Promise<number> =>
  rawPost(
    `http://127.0.0.1:${port}/events/webhook_b`,
    { authorization: basic('b', `guess-${seq}`), 'user-agent': `${CRAFTED[seq % CRAFTED.length]} #${seq}` },
    '{"source":"h","severity":"critical"}',
    localAddress,
  ).then(
    (r) => r.status,
    () => 0,
  );

/** The stranger: up to 16 logins in flight, round-robin over its addresses, until the attack ends. */
async function stranger(port: number, untilMs: number): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  let seq = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < untilMs && seq < MAX_STRANGER_REQUESTS) {
      const n = seq++;
      const status = await strangerLogin(port, STRANGERS[n % STRANGERS.length] as string, n);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return statuses;
}

let ing: RunningIngester;
beforeAll(async () => {
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push(tenantRoute('b', 'team-b'));
  });
});
afterAll(async () => {
  await ing?.stop('SIGKILL'); // the row is over: a graceful stop would drain what A left in flight
});

it("a stranger's failed logins with crafted User-Agents neither push out tenant B's refusals nor put text on B's screen", async () => {
  const auth = tenantAuth('b');
  const event = JSON.stringify({ source: 'b-host', severity: 'critical', summary: 'steady' });
  const started = performance.now();
  const attack = stranger(ing.port, started + ATTACK_MS);
  // B's own refusals, spread over the attack: events without a source, from B's real sender.
  const earned = (async () => {
    const statuses: number[] = [];
    for (let i = 0; i < B_REFUSALS; i++) {
      await new Promise((r) => setTimeout(r, ATTACK_MS / (B_REFUSALS + 1)));
      const res = await post(
        `${ing.url}/events/webhook_b`,
        { severity: 'critical', run: i },
        {
          ...auth,
          'user-agent': B_AGENT,
        },
      );
      statuses.push(res.status);
    }
    return statuses;
  })();
  const steady = await steadyTenant({
    url: `${ing.url}/events/webhook_b`,
    headers: { ...auth, 'content-type': 'application/json', 'user-agent': B_AGENT },
    body: event,
    perSecond: 20,
    durationMs: ATTACK_MS,
    adminUrl: ing.adminUrl,
  });
  const [strangerStatuses, earnedStatuses] = await Promise.all([attack, earned]);
  const sent = [...strangerStatuses.values()].reduce((a, b) => a + b, 0);
  // The stranger got only refusals before authentication (401, then 429 once each address is blocked).
  expect([...strangerStatuses.keys()].filter((s) => s !== 401 && s !== 429)).toEqual([]);
  expect(sent).toBeGreaterThanOrEqual(100);
  expect(earnedStatuses).toEqual(Array(B_REFUSALS).fill(400));

  const report = (await (await fetch(`${ing.adminUrl}/status/activity`)).json()) as ActivityReport;
  const b = report.webhookIntegrations.find((a) => a.name === 'b') as ReportedActivity;
  // Every refusal B earned is there, from B's sender; none of the stranger's took a slot.
  expect(b.recentRefusals.map((f) => [f.status, f.code, f.remoteAddress, f.userAgent])).toEqual(
    Array(B_REFUSALS).fill([400, 'INVALID_BODY', '127.0.0.1', B_AGENT]),
  );
  expect(b.refusalsLastHour.invalid).toBe(B_REFUSALS);
  expect((b.refusalsLastHour.unauthorized ?? 0) + (b.refusalsLastHour.auth_throttled ?? 0)).toBe(sent);
  // The stranger: only addresses and counts.
  expect(b.unauthenticatedSenders?.length).toBeGreaterThan(0);
  for (const s of b.unauthenticatedSenders ?? []) expect(STRANGERS).toContain(s.remoteAddress);
  // No text of the stranger's, and no control character, anywhere.
  const raw = JSON.stringify(report);
  expect(raw).not.toMatch(/URGENT|rotate now|intake-support|nekot/);
  const unsafe: string[] = [];
  JSON.stringify(report, (k: string, v: unknown) => {
    if (ACTS_ON_SCREEN.test(k) || (typeof v === 'string' && ACTS_ON_SCREEN.test(v))) unsafe.push(String(v));
    return v;
  });
  expect(unsafe).toEqual([]);
  const table = (await run(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), 'status', '--admin-url', ing.adminUrl]))
    .stdout;
  expect(table).not.toMatch(/URGENT|rotate now/);
  expect(table.replace(/\n/g, '')).not.toMatch(ACTS_ON_SCREEN);
  expect(table).toMatch(/refused before authentication/);
  expect(ing.stderr().replace(/\n/g, '')).not.toMatch(ACTS_ON_SCREEN);

  console.log(
    `activity slots: stranger ${sent} logins (${[...strangerStatuses].map(([s, n]) => `${s}x${n}`).join(', ')}); ` +
      `B ${steady.statuses.length} requests, p50 ${steady.p50Ms.toFixed(1)} ms, p99 ${steady.p99Ms.toFixed(1)} ms`,
  );
  // B: no unearned refusal, its latency bounded beside the attack, the replica ready throughout.
  // Measured p99 ~20-60 ms on the loaded 2-core machine; the bound is for a busy one.
  expectUnharmed(steady, { p99BoundMs: 2_000 });
});
