/**
 * Hostile-neighbour matrix, the outbox (docs/design.md §4b): without the bus every tenant's events
 * wait in the replica's one outbox until their destination takes them. The destination is down
 * (503) and tenant A bursts large requests into the outbox; A holds at most its share
 * (`spool.maxBytesPerNamespace`, a quarter of maxBytes by default) and is then refused alone
 * (503 OUTBOX_SHARE_FULL with Retry-After). B's events are all accepted (200) within the bound,
 * and the replica stays ready: the outbox still has room for everyone else.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { burstIntoStore, expectUnharmed } from './support.js';

const MiB = 1024 * 1024;
const MAX_BYTES = 8 * MiB;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-hn-outbox-'));
let receiver: EventReceiver | undefined;
let ing: RunningIngester | undefined;

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  rmSync(spoolDir, { recursive: true, force: true });
});

it("A's burst into the outbox while the destination is down takes only A's share; B is accepted and the replica stays ready", async () => {
  receiver = await startEventReceiver();
  // Down for everyone: every row stays in the outbox, retried.
  receiver.script = Array.from({ length: 1_000_000 }, () => ({ status: 503 }));
  const url = receiver.url;
  ing = await startIngester((c) => {
    c.destinations = [{ name: 'tickets', default: true, http: { url, timeout: '1s' } }];
    // The default share: a quarter of maxBytes.
    c.spool = { path: spoolDir, maxBytes: MAX_BYTES };
    (c.routes as unknown[]).push(tenantRoute('hn-outbox-a', 'team-a'), tenantRoute('hn-outbox-b', 'team-b'));
  });
  const ingestUrl = ing.url;

  const { acceptedOfA, refusalsOfA, b } = await burstIntoStore({
    ingestUrl,
    adminUrl: ing.adminUrl,
    a: { integration: 'hn-outbox-a', ...tenantAuth('hn-outbox-a') },
    b: { integration: 'hn-outbox-b', ...tenantAuth('hn-outbox-b') },
    // 80 of B's requests beside A's full share: A is refused from its first second on.
    durationMs: 4_000,
  });
  console.log(
    `outbox row: B ${b.statuses.length} requests, p50 ${b.p50Ms.toFixed(1)} ms, p99 ${b.p99Ms.toFixed(1)} ms; ` +
      `A ${acceptedOfA} accepted, ${refusalsOfA.length} refused`,
  );

  // B: every request accepted, within the bound (one fsync per turn beside A's writes), replica ready.
  expectUnharmed(b, { p99BoundMs: 1500 });
  // A: refused alone, at its share, with the limit named and a Retry-After.
  expect(acceptedOfA).toBeGreaterThan(0);
  expect(refusalsOfA.length).toBeGreaterThan(0);
  expect(
    refusalsOfA.filter((r) => !/^503 \d+ .*spool\.maxBytesPerNamespace.*"code":"OUTBOX_SHARE_FULL"/.test(r)),
  ).toEqual([]);
}, 60_000);
