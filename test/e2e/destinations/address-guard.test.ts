/**
 * The address guard through the built ingester, standalone (the outbox): a team's destination
 * (one with a namespace) pointed at loopback with loopback denied is refused, its events
 * dead-lettered with reason address_refused, and the receiver sees no connection at all: by
 * address, by `localhost` (a name resolving to loopback) and by an IPv4-mapped IPv6 address, for
 * HTTP and Alertmanager destinations.
 * With loopback allowed it is delivered; a platform destination is guarded only when the admin
 * says so. Every address used is loopback: the guard is proved by denying loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';

/** A loopback TCP listener that only counts the connections made to it (IPv4 and IPv6 loopback). */
interface Listener {
  port: number;
  connections: number;
  close(): Promise<void>;
}
async function countingListener(): Promise<Listener> {
  const l = { connections: 0 } as Listener;
  const sockets = new Set<import('node:net').Socket>();
  const onConnection = (s: import('node:net').Socket): void => {
    l.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.destroy();
  };
  const v4: Server = createServer(onConnection);
  await new Promise<void>((resolve) => v4.listen(0, '127.0.0.1', resolve));
  l.port = (v4.address() as AddressInfo).port;
  // `localhost` may resolve to ::1 first: a listener there on the same port counts those too.
  const v6: Server = createServer(onConnection);
  await new Promise<void>((resolve) => {
    v6.once('error', () => resolve());
    v6.listen(l.port, '::1', resolve);
  });
  l.close = async () => {
    for (const s of sockets) s.destroy();
    await Promise.all(
      [v4, v6].map((s) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))),
    );
  };
  return l;
}

interface Letter {
  destination: string;
  reason: string;
  error: string;
  attempts: number;
  event: { source: string };
}

const dirs: string[] = [];
const ingesters: RunningIngester[] = [];
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const i of ingesters) await i.stop();
  await Promise.all(closers.map((c) => c()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function start(destinations: unknown[], addressGuard: Record<string, unknown>): Promise<RunningIngester> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-address-guard-'));
  dirs.push(dir);
  const ing = await startIngester((c) => {
    c.spool = { path: dir };
    c.destinations = destinations;
    c.addressGuard = addressGuard;
  });
  ingesters.push(ing);
  return ing;
}

const send = async (ing: RunningIngester, source: string): Promise<void> => {
  const res = await post(
    `${ing.url}/events/webhook_demo`,
    { source, severity: 'critical', type: 'Down' },
    {
      authorization: basic(DEMO.user, DEMO.password),
    },
  );
  expect(res.status).toBe(200);
};

const letters = async (ing: RunningIngester): Promise<Letter[]> => {
  const res = await fetch(`${ing.adminUrl}/deadletter?kind=delivery&limit=100&payload=true`);
  return res.ok ? ((await res.json()) as { entries: Letter[] }).entries : [];
};

const metric = async (ing: RunningIngester, series: string): Promise<number> => {
  const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
};

const FAST = { delivery: { backoffMin: '50ms', backoffMax: '200ms' } };

it("refuses a team destination's loopback addresses when loopback is denied, and never connects", async () => {
  const target = await countingListener();
  const platform = await startEventReceiver();
  closers.push(
    () => target.close(),
    () => platform.close(),
  );
  const teamDestinations = [
    ['by-address', `http://127.0.0.1:${target.port}/hook`],
    ['by-name', `http://localhost:${target.port}/hook`],
    ['by-mapped', `http://[::ffff:127.0.0.1]:${target.port}/hook`],
  ] as const;
  const ing = await start(
    [
      ...teamDestinations.map(([name, url]) => ({ name, namespace: 'default', default: true, http: { url }, ...FAST })),
      {
        name: 'team-alertmanager',
        namespace: 'default',
        default: true,
        alertmanager: { urls: [`http://localhost:${target.port}`] },
        ...FAST,
      },
      // The platform's own destinations are not guarded unless the admin says so.
      { name: 'platform', default: true, http: { url: platform.url }, ...FAST },
    ],
    { deniedCIDRs: ['127.0.0.0/8', '::1/128'] },
  );
  await send(ing, 'web-01');
  const kept = await waitFor(
    'the refused events in the dead letter',
    async () => {
      const l = await letters(ing);
      return l.length >= teamDestinations.length + 1 ? l : undefined;
    },
    20_000,
    100,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${ing.stdout().slice(-3000)}`);
  });
  expect(kept.map((l) => l.destination).sort()).toEqual(['by-address', 'by-mapped', 'by-name', 'team-alertmanager']);
  for (const l of kept) {
    // Dead-lettered at the first attempt: a setting refused it, sending again gives the same answer.
    expect(l).toMatchObject({ reason: 'address_refused', attempts: 1, event: { source: 'web-01' } });
    expect(l.error).toMatch(/the address guard refused (127\.0\.0\.1|::1|::ffff:7f00:1).*: it is in the denied range/);
  }
  expect(kept.find((l) => l.destination === 'by-name')?.error).toContain('(resolved from localhost)');
  await waitFor('the platform destination delivered', async () => platform.accepted.size === 1, 15_000, 50);
  expect(target.connections).toBe(0);
  for (const name of [...teamDestinations.map(([n]) => n), 'team-alertmanager']) {
    expect(
      await metric(ing, `intake_destination_address_refused_total{destination="${name}",by="denied"}`),
    ).toBeGreaterThanOrEqual(1);
    expect(
      await metric(ing, `intake_destination_dead_lettered_total{destination="${name}",reason="address_refused"}`),
    ).toBe(1);
  }
  // More events for the same destination: refused again (each connection is checked), logged once per interval.
  await send(ing, 'web-02');
  await waitFor('the second event refused too', async () => (await letters(ing)).length >= 8, 20_000, 100);
  expect(target.connections).toBe(0);
  const logged = (): string[] =>
    (ing.stdout() + ing.stderr())
      .split('\n')
      .filter((l) => l.includes('the address guard refused a destination connection') && l.includes('"by-address"'));
  // The log is written asynchronously: wait for the line, then check there is only one.
  await waitFor('the refusal logged', async () => logged().length > 0, 10_000, 50);
  expect(logged()).toHaveLength(1);
  expect(logged()[0]).toContain('"namespace":"default"');
}, 60_000);

it('delivers to a team destination on loopback once the admin allows loopback', async () => {
  const receiver: EventReceiver = await startEventReceiver();
  closers.push(() => receiver.close());
  const ing = await start(
    [{ name: 'team', namespace: 'default', default: true, http: { url: receiver.url }, ...FAST }],
    {
      allowedCIDRs: ['127.0.0.0/8'],
    },
  );
  await send(ing, 'web-03');
  await waitFor('delivered', async () => receiver.accepted.size === 1, 15_000, 50);
  expect(await letters(ing)).toEqual([]);
  expect(await metric(ing, 'intake_destination_delivered_total{destination="team"}')).toBe(1);
}, 40_000);

it('refuses loopback by default, and guards a platform destination when the admin says so', async () => {
  const target = await countingListener();
  closers.push(() => target.close());
  const ing = await start(
    [
      { name: 'team', namespace: 'default', default: true, http: { url: `http://127.0.0.1:${target.port}/` }, ...FAST },
      { name: 'platform', default: true, http: { url: `http://127.0.0.1:${target.port}/` }, ...FAST },
    ],
    { platformDestinations: true },
  );
  await send(ing, 'web-04');
  const kept = await waitFor(
    'both refused',
    async () => {
      const l = await letters(ing);
      return l.length >= 2 ? l : undefined;
    },
    20_000,
    100,
  );
  expect(kept.map((l) => [l.destination, l.reason]).sort()).toEqual([
    ['platform', 'address_refused'],
    ['team', 'address_refused'],
  ]);
  expect(kept[0]?.error).toContain('127.0.0.0/8 (loopback, refused by default)');
  expect(target.connections).toBe(0);
}, 40_000);
