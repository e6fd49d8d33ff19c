import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { DeliveryReport, ReportedDelivery } from '../../../../api/delivery-status.js';
import type { Destination, DestinationDelivery } from '../../../../api/v1alpha1/types.js';
import { DeliverySync } from '../../../../operator/delivery/sync.js';
import { OperatorMetrics } from '../../../../operator/metrics.js';

let server: Server;
let url: string;
let answer: () => { status: number; body: string } = () => ({ status: 200, body: '{}' });

beforeAll(async () => {
  server = createServer((_req, res) => {
    const a = answer();
    res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const reported = (over: Partial<ReportedDelivery> = {}): ReportedDelivery => ({
  name: 'team-a/tickets',
  namespace: 'team-a',
  kind: 'http',
  deliveredLastHour: 3,
  failedLastHour: 0,
  deadLetteredLastHour: 0,
  backlogShared: true,
  backlog: 0,
  circuit: 'closed',
  paused: false,
  lastSuccess: { time: '2026-11-27T10:00:00.000Z', statusCode: 200 },
  ...over,
});
const report = (...destinations: ReportedDelivery[]): DeliveryReport => ({
  time: new Date().toISOString(),
  destinations,
});

function setUp(destinations: Destination[]) {
  const writes = new Map<string, () => Promise<void>>();
  const written: Array<{ name: string; delivery: DestinationDelivery }> = [];
  const sync = new DeliverySync({
    logger: pino({ level: 'silent' }),
    metrics: new OperatorMetrics(new Registry()),
    destinations: () => destinations,
    write: async (d, delivery) => void written.push({ name: d.metadata.name as string, delivery }),
    retainMs: 60_000,
  });
  const queue = {
    set: (k: string, w: () => Promise<void>) => writes.set(k, w),
    delete: (k: string) => writes.delete(k),
  };
  return { sync, writes, written, queue };
}

const tickets = (delivery?: DestinationDelivery): Destination => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'Destination',
  metadata: { namespace: 'team-a', name: 'tickets' },
  spec: { http: { url: 'https://tickets.example' } },
  ...(delivery ? { status: { delivery } } : {}),
});

describe('DeliverySync', () => {
  it("queues a write of the Destination's merged delivery, and none once the status holds it", async () => {
    answer = () => ({
      status: 200,
      body: JSON.stringify(
        report(reported(), reported({ name: 'platform' }), reported({ name: 'team-b/other', namespace: 'team-b' })),
      ),
    });
    const d = tickets();
    const { sync, writes, written, queue } = setUp([d]);
    await sync.poll([{ key: 'a', url }], 2000);
    sync.merge(queue);
    expect([...writes.keys()]).toEqual(['Destination/team-a/tickets']);
    await writes.get('Destination/team-a/tickets')?.();
    expect(written[0]?.delivery).toMatchObject({ deliveredLastHour: 3, backlog: 0, lastSuccess: { statusCode: 200 } });
    expect(written[0]?.delivery.updatedTime).toBeDefined();
    expect(sync.mergedOf(d)?.replicas).toBe(1);
    // The same again, before and after the watch brought the write back: nothing to write.
    writes.clear();
    sync.merge(queue);
    expect(writes.size).toBe(0);
    const { sync: again, writes: none, queue: q2 } = setUp([tickets(written[0]?.delivery)]);
    await again.poll([{ key: 'a', url }], 2000);
    again.merge(q2);
    expect(none.size).toBe(0);
  });

  it('writes nothing for a Destination no replica reports, and keeps a silent replica for the retention only', async () => {
    answer = () => ({ status: 200, body: JSON.stringify(report(reported({ name: 'team-a/else' }))) });
    const { sync, writes, queue } = setUp([tickets({ deliveredLastHour: 9 })]);
    await sync.poll([{ key: 'a', url }], 2000);
    sync.merge(queue);
    expect(writes.size).toBe(0);
    expect(sync.mergedOf(tickets())).toBeUndefined();
  });

  it('keeps the last report of a replica that answers wrongly, too slowly or too much', async () => {
    const { sync, writes, queue } = setUp([tickets()]);
    answer = () => ({ status: 200, body: JSON.stringify(report(reported())) });
    await sync.poll([{ key: 'a', url }], 2000);
    for (const bad of [
      { status: 500, body: '{}' },
      { status: 200, body: 'not json' },
      { status: 200, body: '{"destinations": 3}' },
      { status: 200, body: JSON.stringify({ destinations: [], pad: 'x'.repeat(17 * 1024 * 1024) }) },
    ]) {
      answer = () => bad;
      await sync.poll([{ key: 'a', url }], 5000);
    }
    sync.merge(queue);
    expect(writes.size).toBe(1);
    expect(sync.mergedOf(tickets())?.delivery.deliveredLastHour).toBe(3);
  });
});
