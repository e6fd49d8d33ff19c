/**
 * A namespace's own consumer on a shared bus destination, with two replicas: tenant A's receiver
 * hangs while A's backlog of 1,200 requests (more than the destination consumer's
 * max_ack_pending) arrives through both replicas. A gets one consumer of its own (whichever
 * replica makes it first; the other reads its start back), B's events keep being delivered by
 * both, and once A's receiver answers every one of A's events is delivered, none dead-lettered.
 * A replica started afterwards finds A's consumer when it connects and delivers nothing of A's
 * twice. Duplicates are allowed only for messages fetched before a replica knew of A's consumer:
 * they are counted and printed, and bounded here by A's part of the room (an eighth of 1,000).
 */
import type { ServerResponse } from 'node:http';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { waitFor } from '../../support/waiting.js';
import { listLetters } from '../dead-letters/support.js';
import { startEventHandler, type EventHandler } from '../support/event-receiver.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';

const A_REQUESTS = 1_200;

let nats: RunningNats;
let server: EventHandler;
let base: string;
const replicas: RunningIngester[] = [];
const hanging: Array<{ res: ServerResponse; sources: string[] }> = [];
let released = false;
const deliveredAtMs = new Map<string, number>();
let twice = 0;

const configure = (c: Record<string, unknown>): void => {
  handoffConfig(nats)(c);
  c.destinations = [
    {
      name: 'hooks',
      http: { url: base, timeout: '60s' },
      delivery: { maxInFlight: 8, backoffMin: '100ms', backoffMax: '500ms', maxAttempts: 2 },
      circuitBreaker: { enabled: false },
    },
  ];
  (c.routes as unknown[]).push(
    tenantRoute('own-consumer-a', 'team-a', { destinations: ['hooks'] }),
    tenantRoute('own-consumer-b', 'team-b', { destinations: ['hooks'] }),
  );
};

beforeAll(async () => {
  nats = await startNats();
  server = await startEventHandler((events, res) => {
    if (events.some((e) => e.source.startsWith('a-')) && !released)
      return void hanging.push({ res, sources: events.map((e) => e.source) });
    for (const e of events)
      if (!deliveredAtMs.has(e.source)) deliveredAtMs.set(e.source, Date.now());
      else twice++;
    res.writeHead(200).end();
  });
  base = server.url;
  for (let i = 0; i < 2; i++) {
    const ing = await startIngester(configure);
    replicas.push(ing);
    await untilDeadLettersOpen(ing.adminUrl);
  }
}, 90_000);

afterAll(async () => {
  for (const { res } of hanging.splice(0)) res.destroy();
  for (const ing of replicas) await ing.stop('SIGKILL');
  await server?.close();
  await nats?.stop();
});

const send = async (integration: string, source: string, replica: number): Promise<void> => {
  const ing = replicas[replica] as RunningIngester;
  const res = await post(`${ing.url}/events/webhook_${integration}`, { source, severity: 3 }, tenantAuth(integration));
  expect(res.status).toBe(200);
};

/**
 * What each replica and the bus hold, for a failed wait: the consumers' pending counts, each
 * replica's destination metrics and what it logged of namespace consumers.
 */
async function whereThingsAre(): Promise<string> {
  const nc = await connect({ servers: nats.url });
  const lines: string[] = [];
  for await (const info of (await jetstreamManager(nc)).consumers.list('INTAKE_EVENTS'))
    lines.push(
      `consumer ${info.name}: ack pending ${info.num_ack_pending}, pending ${info.num_pending}, waiting pulls ${info.num_waiting}, delivered up to ${info.delivered.stream_seq}, ack floor ${info.ack_floor.stream_seq}`,
    );
  await nc.close();
  for (const [i, ing] of replicas.entries()) {
    const metrics = await (await fetch(`${ing.adminUrl}/metrics`)).text();
    const ours = metrics.split('\n').filter((l) => !l.startsWith('#') && /^intake_destination.*hooks/.test(l));
    const logged = ing
      .output()
      .split('\n')
      .filter((l) => /namespace|consumer/i.test(l));
    lines.push(`replica ${i}:`, ...ours.map((l) => `  ${l}`), ...logged.slice(-10).map((l) => `  log: ${l}`));
  }
  lines.push(`hanging requests at the receiver: ${hanging.length}`);
  return lines.join('\n');
}

/** `waitFor`, and on a timeout what each replica and the bus hold. */
async function waitExplained(what: string, fn: () => Promise<boolean>, timeoutMs: number, intervalMs: number) {
  try {
    await waitFor(what, fn, timeoutMs, intervalMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await whereThingsAre()}`);
  }
}

async function consumers(): Promise<string[]> {
  const nc = await connect({ servers: nats.url });
  const names: string[] = [];
  for await (const info of (await jetstreamManager(nc)).consumers.list('INTAKE_EVENTS')) names.push(info.name);
  await nc.close();
  return names.sort();
}

it("gives A one consumer of its own across two replicas; B's events go on; A's are all delivered after", async () => {
  await send('own-consumer-b', 'b-first-0', 0);
  await send('own-consumer-b', 'b-first-1', 1);
  await waitFor(
    'B delivered',
    async () => deliveredAtMs.has('b-first-0') && deliveredAtMs.has('b-first-1'),
    15_000,
    50,
  );
  let next = 0;
  const sender = async (): Promise<void> => {
    for (let n = next++; n < A_REQUESTS; n = next++) await send('own-consumer-a', `a-${n}`, n % 2);
  };
  await Promise.all(Array.from({ length: 8 }, sender));
  // B beside A's backlog, through both replicas: delivered within a few seconds.
  const bSources: string[] = [];
  const started = Date.now();
  for (let i = 0; i < 20; i++) {
    bSources.push(`b-${i}`);
    await send('own-consumer-b', `b-${i}`, i % 2);
    await new Promise((r) => setTimeout(r, 100));
  }
  await waitExplained(
    "B's events delivered beside A's backlog",
    async () => bSources.every((s) => deliveredAtMs.has(s)),
    5_000,
    50,
  );
  const slowestB = Math.max(...bSources.map((s) => (deliveredAtMs.get(s) as number) - started));
  expect(await consumers()).toEqual(['intake-hooks', 'intake-hooks@team-a']);

  released = true;
  for (const { res, sources } of hanging.splice(0)) {
    for (const source of sources) deliveredAtMs.set(source, Date.now());
    res.writeHead(200).end();
  }
  const allA = Array.from({ length: A_REQUESTS }, (_, i) => `a-${i}`);
  await waitFor("A's events delivered", async () => allA.every((s) => deliveredAtMs.has(s)), 60_000, 200);
  const lettersOf = async (): Promise<number> =>
    Math.max(...(await Promise.all(replicas.map(async (ing) => (await listLetters(ing)).count))));
  console.log(
    `namespace consumers, two replicas: B's 20 delivered within ${slowestB} ms of the first sent; ` +
      `A's ${A_REQUESTS} delivered, ${twice} taken twice, ${await lettersOf()} dead-lettered`,
  );
  expect(await lettersOf()).toBe(0);
  expect(twice).toBeLessThanOrEqual(125);
}, 120_000);

it("a replica started afterwards finds A's consumer when it connects: nothing of A's is delivered twice", async () => {
  // A's receiver hangs again on a new backlog; a third replica joins, then A's events arrive.
  released = false;
  const before = twice;
  const third = await startIngester(configure);
  replicas.push(third);
  await untilDeadLettersOpen(third.adminUrl);
  for (let i = 0; i < 200; i++) await send('own-consumer-a', `a-late-${i}`, 2);
  await send('own-consumer-b', 'b-late', 2);
  await waitExplained('B delivered through the third replica', async () => deliveredAtMs.has('b-late'), 10_000, 50);
  released = true;
  for (const { res, sources } of hanging.splice(0)) {
    for (const source of sources) deliveredAtMs.set(source, Date.now());
    res.writeHead(200).end();
  }
  const late = Array.from({ length: 200 }, (_, i) => `a-late-${i}`);
  await waitFor("A's late events delivered", async () => late.every((s) => deliveredAtMs.has(s)), 30_000, 100);
  await new Promise((r) => setTimeout(r, 1_000));
  expect(twice - before).toBe(0);
}, 90_000);
