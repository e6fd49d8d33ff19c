/**
 * Hostile-neighbour matrix, the spool (docs/design.md §4b): while the bus is down every tenant's
 * events go to the replica's one spool. Tenant A bursts large requests into it; A holds at most
 * its share (`spool.maxBytesPerNamespace`, a quarter of maxBytes by default) and is then refused
 * alone (503 SPOOL_SHARE_FULL with Retry-After). B's events are all spooled (200) within the
 * bound, and the replica stays ready: the spool still has room for everyone else.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';
import { burstIntoStore, expectUnharmed } from './support.js';

const MiB = 1024 * 1024;
const MAX_BYTES = 8 * MiB;
const spoolDir = mkdtempSync(join(tmpdir(), 'intake-hn-spool-'));
let nats: RunningNats | undefined;
let ing: RunningIngester | undefined;

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await nats?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
});

it("A's burst into the spool while the bus is down takes only A's share; B is spooled and the replica stays ready", async () => {
  nats = await startNats();
  const running = nats;
  ing = await startIngester((c) => {
    // The default share: a quarter of maxBytes.
    handoffConfig(running, { spoolDir, spoolMaxBytes: MAX_BYTES })(c);
    (c.routes as unknown[]).push(tenantRoute('hn-spool-a', 'team-a'), tenantRoute('hn-spool-b', 'team-b'));
  });
  await nats.kill9();
  const url = ing.url;

  const { acceptedOfA, refusalsOfA, b } = await burstIntoStore({
    ingestUrl: url,
    adminUrl: ing.adminUrl,
    a: { integration: 'hn-spool-a', ...tenantAuth('hn-spool-a') },
    b: { integration: 'hn-spool-b', ...tenantAuth('hn-spool-b') },
    // 80 of B's requests beside A's full share: A is refused from its first second on.
    durationMs: 4_000,
  });
  console.log(
    `spool row: B ${b.statuses.length} requests, p50 ${b.p50Ms.toFixed(1)} ms, p99 ${b.p99Ms.toFixed(1)} ms; ` +
      `A ${acceptedOfA} accepted, ${refusalsOfA.length} refused`,
  );

  // B: every request spooled, within the bound (one fsync per turn beside A's writes), replica ready.
  expectUnharmed(b, { p99BoundMs: 1500 });
  // A: refused alone, at its share, with the limit named and a Retry-After.
  expect(acceptedOfA).toBeGreaterThan(0);
  expect(refusalsOfA.length).toBeGreaterThan(0);
  expect(
    refusalsOfA.filter((r) => !/^503 \d+ .*spool\.maxBytesPerNamespace.*"code":"SPOOL_SHARE_FULL"/.test(r)),
  ).toEqual([]);
  // The spool holds A's share and B's events, far from full.
  const held = (await metricValue(ing.adminUrl, 'intake_spool_bytes')) as number;
  expect(held).toBeLessThan(MAX_BYTES / 4 + MiB);
}, 60_000);
