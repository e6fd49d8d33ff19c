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
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';
import { expectUnharmed, steadyTenant } from './support.js';

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

  let attacking = true;
  const refusalsOfA: string[] = [];
  let acceptedOfA = 0;
  const burst = async (worker: number): Promise<void> => {
    for (let n = 0; attacking; n++) {
      const events = Array.from({ length: 50 }, (_, i) => ({
        source: `a-${worker}-${n}-${i}`,
        severity: 3,
        description: 'x'.repeat(4096),
      }));
      const res = await post(`${url}/events/webhook_hn-spool-a`, events, tenantAuth('hn-spool-a')).catch(
        () => undefined,
      );
      if (res?.status === 200) acceptedOfA++;
      else if (res) {
        refusalsOfA.push(`${res.status} ${res.headers.get('retry-after') ?? '-'} ${res.text}`);
        // Refused at once: the next try after a short pause, as a sender honouring Retry-After would not.
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const attack = Promise.all([burst(0), burst(1), burst(2), burst(3)]);
  // A holds its whole share before B starts.
  await new Promise((r) => setTimeout(r, 2000));

  const b = await steadyTenant({
    url: `${url}/events/webhook_hn-spool-b`,
    headers: { 'content-type': 'application/json', ...tenantAuth('hn-spool-b') },
    body: (seq) => ({ body: JSON.stringify({ source: `b-${seq}`, severity: 2, description: 'steady' }) }),
    perSecond: 20,
    durationMs: 8000,
    adminUrl: ing.adminUrl,
  });
  attacking = false;
  await attack;
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
