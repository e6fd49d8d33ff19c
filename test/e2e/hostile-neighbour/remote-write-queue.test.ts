/**
 * Hostile-neighbour matrix, the remote write queue (docs/design.md §4b): tenant A's receiver
 * fails (a Mimir that answers 429 and 500 for A's X-Scope-OrgID only) while A keeps posting
 * label-heavy points, so its batches stay queued and are retried. A fills its own share of the
 * queue and gets 503 naming it; tenant B, on the same ingester and the same receiver, gets 200 on
 * every request, every one of its points reaches the receiver, and the replica stays ready.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fromBinary } from '@bufbuild/protobuf';
import { uncompressSync } from 'snappy';
import { WriteRequestSchema } from '../../../ingester/series/remote-write/generated/remote_write_v1_pb.js';
import { waitFor } from '../../support/waiting.js';
import { post, startIngester, type RunningIngester } from '../support/ingester.js';
import { expectUnharmed, steadyTenant } from './support.js';

const apiKey = (name: string) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'ApiKey',
  name,
  namespace: name,
  credentials: [{ username: name, secret: { plain: `${name}_0123456789abcdef0123456789abcdef` } }],
});
const keyOf = (name: string) => `${name}_0123456789abcdef0123456789abcdef`;

/** A receiver on loopback that refuses one tenant (429, then 500, in turn) and takes everyone else's samples. */
async function tenantFailingReceiver(failing: string) {
  const taken = new Map<string, number>();
  let refusedRequests = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const tenant = String(req.headers['x-scope-orgid']);
      if (tenant === failing) {
        res.writeHead(refusedRequests++ % 2 === 0 ? 429 : 500).end('per-tenant limit');
        return;
      }
      const request = fromBinary(WriteRequestSchema, uncompressSync(Buffer.concat(chunks)) as Buffer);
      const samples = request.timeseries.reduce((n, ts) => n + ts.samples.length, 0);
      taken.set(tenant, (taken.get(tenant) ?? 0) + samples);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/push`,
    taken,
    refused: () => refusedRequests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const NOTE = 'n'.repeat(300);
let ing: RunningIngester | undefined;
afterEach(async () => {
  await ing?.stop('SIGKILL');
  ing = undefined;
});

it("a tenant whose receiver fails fills only its own share of the queue: another tenant's points are all taken and reach the receiver, the replica stays ready", async () => {
  const receiver = await tenantFailingReceiver('team-a');
  try {
    ing = await startIngester((c) => {
      // 4 MiB in all (a namespace's share: the default eighth), so A would fill the whole queue in seconds.
      c.remoteWrite = {
        url: receiver.url,
        tenantHeader: 'X-Scope-OrgID',
        maxQueuedBytes: 4 * 1024 * 1024,
        flushInterval: '100ms',
        backoffMin: '100ms',
        backoffMax: '1s',
      };
      c.exposition = { enabled: false };
      (c.routes as unknown[]).push(apiKey('team-a'), apiKey('team-b'));
    });
    const url = `${ing.url}/v1/integrations/metrics`;
    // A: 20 points of ~1 KB random labels a request, new series each time: A fills the queue to within one such request.
    const attackOnce = () =>
      post(
        url,
        Array.from({ length: 20 }, () => ({
          metric: 'a.heavy',
          data: 1,
          source: randomBytes(8).toString('hex'),
          tags: { blob: randomBytes(500).toString('hex') },
        })),
        { apikey: keyOf('team-a') },
      );
    const aRefusals: Array<Awaited<ReturnType<typeof attackOnce>>> = [];
    // A fills its share first (refused three times in a row), bounded in time.
    for (let refusedInRow = 0, started = Date.now(); refusedInRow < 3 && Date.now() - started < 15_000;) {
      const res = await attackOnce();
      if (res.status === 200) refusedInRow = 0;
      else {
        refusedInRow++;
        aRefusals.push(res);
      }
    }
    // A keeps going beside B.
    let attacking = true;
    const attack = (async () => {
      while (attacking) {
        const res = await attackOnce();
        if (res.status !== 200) aRefusals.push(res);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const b = await steadyTenant({
      url,
      headers: { apikey: keyOf('team-b'), 'content-type': 'application/json' },
      body: (seq) => ({
        // 40 points with a 300-character tag: more than the room A leaves in a queue it could fill.
        body: JSON.stringify(
          Array.from({ length: 40 }, (_, i) => ({
            metric: 'b.steady',
            data: seq,
            source: `b-${i}`,
            tags: { note: NOTE },
          })),
        ),
      }),
      perSecond: 20,
      durationMs: 4_000,
      adminUrl: ing.adminUrl,
    });
    attacking = false;
    await attack;
    process.stdout.write(
      `remote write queue, A's receiver failing: A refused ${aRefusals.length} times; B ${b.statuses.length} requests, p50 ${b.p50Ms.toFixed(1)} ms, p99 ${b.p99Ms.toFixed(1)} ms, unready polls ${b.unreadyPolls}\n`,
    );
    expectUnharmed(b, { p99BoundMs: 1_500 });
    // Every point B was told 200 for reaches the receiver.
    await waitFor('all of B sent', async () => receiver.taken.get('team-b') === b.statuses.length * 40, 20_000, 200);
    // A was refused on its own share, with the limit named.
    expect(receiver.refused()).toBeGreaterThan(0);
    expect(aRefusals.length).toBeGreaterThan(0);
    for (const r of aRefusals) {
      expect([r.status, r.headers.get('retry-after')]).toEqual([503, '5']);
      expect(r.json()).toMatchObject({
        code: 'REMOTE_WRITE_QUEUE_FULL',
        limit: { scope: 'namespace', namespace: 'team-a', field: 'remoteWrite.maxQueuedBytesPerTenant' },
      });
    }
    expect((await fetch(`${ing.adminUrl}/readyz`)).status).toBe(200);
  } finally {
    await receiver.close();
  }
}, 60_000);
