/**
 * Hostile-neighbour matrix, event inspector captures (docs/design.md §4b): the replica's capture
 * memory is shared by every tenant that enabled the inspector. Tenant A floods five inspected
 * integrations with bodies at the capture cap, and a stranger floods B's integration with wrong
 * credentials and large bodies. A's namespace holds at most its share and gives up only its own
 * oldest captures; the stranger's requests are never captured; every request of B's (sent at a
 * steady rate beside the attack) is still listed; B is answered 200 within the bound and the
 * replica stays ready.
 */
import type { CapturedRequestSummary } from '../../../api/inspector.js';
import { waitFor } from '../../support/waiting.js';
import { basic, post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { expectUnharmed, steadyTenant } from './support.js';

const SHARE = 256 * 1024;
const BODY_CAP = 16 * 1024;
const A_INTEGRATIONS = 5;
let ing: RunningIngester | undefined;

afterAll(async () => {
  await ing?.stop('SIGKILL');
});

const listed = async (integration: string, namespace: string): Promise<CapturedRequestSummary[]> =>
  (
    (await (await fetch(`${ing!.adminUrl}/inspector/${namespace}/${integration}`)).json()) as {
      requests: CapturedRequestSummary[];
    }
  ).requests;

it("A's flood of captures and a stranger's requests push none of B's captures out", async () => {
  ing = await startIngester((c) => {
    c.inspector = { maxBytes: 4 * SHARE, maxBytesPerNamespace: SHARE, maxBodyBytes: BODY_CAP };
    (c.routes as unknown[]).push(
      ...Array.from({ length: A_INTEGRATIONS }, (_, i) =>
        tenantRoute(`hn-insp-a${i}`, 'team-a', { inspect: { enabled: true, requests: 200 } }),
      ),
      tenantRoute('hn-insp-b', 'team-b', { inspect: { enabled: true, requests: 200 } }),
    );
  });
  const url = ing.url;
  let attacking = true;
  let aCaptured = 0;
  const floodA = async (worker: number): Promise<void> => {
    for (let n = 0; attacking; n++) {
      const name = `hn-insp-a${(worker + n) % A_INTEGRATIONS}`;
      const res = await post(
        `${url}/events/webhook_${name}`,
        { source: `a-${n}`, severity: 2, pad: 'x'.repeat(BODY_CAP) },
        tenantAuth(name),
      ).catch(() => undefined);
      if (res) aCaptured++;
    }
  };
  let strangerRequests = 0;
  const stranger = async (): Promise<void> => {
    while (attacking) {
      await post(
        `${url}/events/webhook_hn-insp-b`,
        { source: 'stranger', severity: 5, pad: 'z'.repeat(8 * 1024) },
        { authorization: basic('hn-insp-b', 'guess') },
      ).catch(() => undefined);
      strangerRequests++;
      // Slow enough to stay under the brute-force guard's block (that is another row's subject):
      // with the 300 ms failure floor, about 10 in the row's 5 s, against the guard's 20.
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const attack = Promise.all([floodA(0), floodA(1), stranger()]);
  // B starts once A has sent more than its share holds.
  await waitFor('A past its share', async () => aCaptured * BODY_CAP > SHARE, 5_000, 20).catch(() => undefined);
  const result = await steadyTenant({
    url: `${url}/events/webhook_hn-insp-b`,
    headers: { 'content-type': 'application/json', ...tenantAuth('hn-insp-b') },
    body: (seq) => ({ body: JSON.stringify({ source: `b-host-${seq}`, severity: 2 }) }),
    perSecond: 10,
    durationMs: 5_000,
    adminUrl: ing.adminUrl,
  });
  attacking = false;
  await attack;

  console.log(
    `inspector captures: A sent ${aCaptured} bodies of ${BODY_CAP / 1024} KiB (its share ${SHARE / 1024} KiB, all ${(4 * SHARE) / 1024} KiB), ` +
      `the stranger ${strangerRequests}; B ${result.statuses.length} requests, p99 ${result.p99Ms.toFixed(1)} ms`,
  );
  expectUnharmed(result, { p99BoundMs: 1500 });
  // A sent far more than its share; its namespace keeps at most the share's worth of captures.
  expect(aCaptured * BODY_CAP).toBeGreaterThan(4 * SHARE);
  let aKept = 0;
  for (let i = 0; i < A_INTEGRATIONS; i++) aKept += (await listed(`hn-insp-a${i}`, 'team-a')).length;
  expect(aKept).toBeGreaterThan(0);
  expect(aKept * BODY_CAP).toBeLessThanOrEqual(SHARE);
  // Every one of B's requests is listed, and none of the stranger's.
  const b = await listed('hn-insp-b', 'team-b');
  expect(strangerRequests).toBeGreaterThan(5);
  expect(b.filter((r) => r.status !== 200)).toEqual([]);
  expect(b.length).toBe(result.statuses.filter((s) => s === 200).length);
}, 60_000);
