/**
 * Hostile-neighbour matrix, dead letters (docs/design.md §4b): the dead-letter store is shared by
 * every tenant of the replica. Tenant A floods it with payloads its mapping cannot map (each one
 * kept as a letter before its 422) and with events its destination refuses (each one a delivery
 * letter); A's namespace holds at most its share and drops only its own oldest. B's letters, kept
 * before and during the attack, are all still listed; B's requests are answered 200 within the
 * bound, and the replica stays ready.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { listLetters } from '../dead-letters/support.js';
import { expectUnharmed, steadyTenant } from './support.js';

const SHARE = 256 * 1024;
const BROKEN = { expression: '{"source": host, "severity": level}' };
const spool = mkdtempSync(join(tmpdir(), 'intake-hn-dl-'));
let receiver: EventReceiver | undefined;
let ing: RunningIngester | undefined;

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  rmSync(spool, { recursive: true, force: true });
});

it("A's flood of dead letters drops only A's own; B's letters are kept", async () => {
  receiver = await startEventReceiver();
  // The destination refuses A's events (A's delivery letters) and takes B's.
  receiver.refuse = (e) => e.namespace === 'team-a';
  ing = await startIngester((c) => {
    c.spool = { path: spool };
    c.deadLetter = { maxBytes: 8 * SHARE, maxBytesPerNamespace: SHARE };
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver!.url, batchSize: 50 } }];
    (c.routes as unknown[]).push(
      tenantRoute('hn-dl-a-mapping', 'team-a', { mapping: BROKEN }),
      tenantRoute('hn-dl-a-refused', 'team-a'),
      tenantRoute('hn-dl-b', 'team-b'),
      tenantRoute('hn-dl-b-mapping', 'team-b', { mapping: BROKEN }),
    );
  });
  const url = ing.url;
  const bLetter = async (n: number): Promise<string> => {
    const res = await post(
      `${url}/events/webhook_hn-dl-b-mapping`,
      { hostname: `b-${n}`, level: 3 },
      tenantAuth('hn-dl-b-mapping'),
    );
    expect(res.status).toBe(422);
    return res.headers.get('x-intake-dead-letter-id') as string;
  };
  const bIds = [await bLetter(0), await bLetter(1)];

  let attacking = true;
  let keptForA = 0;
  const floodMapping = async (): Promise<void> => {
    for (let n = 0; attacking; n++) {
      const res = await post(
        `${url}/events/webhook_hn-dl-a-mapping`,
        { hostname: `a-${n}`, level: 3, pad: 'x'.repeat(16 * 1024) },
        tenantAuth('hn-dl-a-mapping'),
      ).catch(() => undefined);
      if (res?.status === 422) keptForA++;
    }
  };
  const floodRefused = async (): Promise<void> => {
    for (let n = 0; attacking; n++) {
      const events = Array.from({ length: 50 }, (_, i) => ({
        source: `a-${n}-${i}`,
        severity: 3,
        pad: 'y'.repeat(500),
      }));
      await post(`${url}/events/webhook_hn-dl-a-refused`, events, tenantAuth('hn-dl-a-refused')).catch(() => undefined);
    }
  };
  const attack = Promise.all([floodMapping(), floodMapping(), floodRefused()]);
  // B starts once A has sent more letters than its share holds.
  await waitFor('A past its share', async () => keptForA * 16 * 1024 > SHARE, 5_000, 20).catch(() => undefined);

  const during = (async () => {
    // B's letters kept while A floods.
    for (let n = 2; n < 6; n++) {
      bIds.push(await bLetter(n));
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  const result = await steadyTenant({
    url: `${url}/events/webhook_hn-dl-b`,
    headers: { 'content-type': 'application/json', ...tenantAuth('hn-dl-b') },
    body: (seq) => ({ body: JSON.stringify({ source: `b-host-${seq}`, severity: 2 }) }),
    perSecond: 10,
    durationMs: 5_000,
    adminUrl: ing.adminUrl,
  });
  await during;
  attacking = false;
  await attack;

  const listed = await listLetters(ing, 'limit=10000');
  console.log(
    `dead letters: A kept ${keptForA} mapping letters of 16 KiB (${((keptForA * 16) / 1024).toFixed(1)} MiB, the store ${(8 * SHARE) / 1024 / 1024} MiB), ` +
      `A's namespace holds ${listed.namespaces['team-a']} bytes; B ${result.statuses.length} requests, p99 ${result.p99Ms.toFixed(1)} ms`,
  );
  expectUnharmed(result, { p99BoundMs: 1500 });
  // A's flood went well past its share, and its namespace holds at most that.
  expect(keptForA * 16 * 1024).toBeGreaterThan(2 * SHARE);
  expect(listed.namespaces['team-a']).toBeLessThanOrEqual(SHARE);
  // Every letter of B is still there.
  const kept = new Set(listed.entries.filter((e) => e.namespace === 'team-b').map((e) => e.id));
  expect(bIds.filter((id) => !kept.has(id))).toEqual([]);
}, 60_000);
