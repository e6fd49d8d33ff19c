/**
 * The bus is up but the dead-letter stream cannot be opened on it (here: another stream already
 * takes its subjects; the same answer comes just after a start, before the stream is set up). A
 * mapping failure is then answered 503, retry later, and the message names the stream and why,
 * never "the bus is not connected": that would send an operator to look at a bus that is fine.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { adminPost } from '../../support/admin.js';
import { waitFor } from '../../support/waiting.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, type RunningNats } from '../support/nats-server.js';

let nats: RunningNats;
let ing: RunningIngester;

beforeAll(async () => {
  nats = await startNats();
  // A stream of someone else's on the dead letters' subjects: the server refuses INTAKE_DEADLETTER.
  const nc = await connect({ servers: nats.url });
  await (await jetstreamManager(nc)).streams.add({ name: 'SQUATTER', subjects: ['intake.deadletter.>'] });
  await nc.close();
  // Not ready meanwhile (jetstream/dead-letter-readiness.test.ts): the start waits for /healthz only.
  ing = await startIngester(
    (c) => {
      handoffConfig(nats)(c);
      (c.routes as unknown[]).push(tenantRoute('failing', 'team-a', { mapping: { expression: '$error("no")' } }));
    },
    { waitReady: false },
  );
}, 60_000);

afterAll(async () => {
  await ing?.stop();
  await nats?.stop();
});

it('answers a mapping failure 503 naming the dead-letter stream that is not open, not a bus that is down', async () => {
  await waitFor('the stream refused', async () => /dead-letter stream not ready/.test(ing.output()), 15_000, 50);
  await waitFor(
    'routes loaded',
    async () => !/loading routes/.test(await (await fetch(`${ing.adminUrl}/readyz`)).text()),
    15_000,
    50,
  );
  const res = await post(`${ing.url}/events/webhook_failing`, { source: 'x', severity: 1 }, tenantAuth('failing'));
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBeTruthy();
  expect(res.json()).toMatchObject({ code: 'DEAD_LETTER_FAILED' });
  const message = String(res.json().message);
  expect(message).toMatch(/the dead-letter stream INTAKE_DEADLETTER is not open on the bus yet \(.*overlap.*\)/);
  expect(message).not.toContain('not connected');
  // The admin list says the same.
  const listed = await fetch(`${ing.adminUrl}/deadletter?limit=1`);
  expect(listed.status).toBe(503);
  expect(await listed.text()).toContain('INTAKE_DEADLETTER is not open on the bus yet');
  // So does a bulk replay, instead of "0 matched" from an index that is not there yet.
  const bulk = await fetch(`${ing.adminUrl}/deadletter/replays`, adminPost());
  expect(bulk.status).toBe(503);
  expect(await bulk.text()).toContain('INTAKE_DEADLETTER is not open on the bus yet');
});
