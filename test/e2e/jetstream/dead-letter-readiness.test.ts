/**
 * Readiness waits for the dead letters on the bus: until their stream first opened, a payload that
 * cannot be mapped would be answered 503 and an event a destination refused would come back, so
 * the replica is not ready, and /readyz names the stream. Only for a bounded time: a stream the
 * server keeps refusing (every replica alike) does not keep every replica out of the Service.
 * The stream is kept from opening by another stream that holds its subjects.
 */
import { jest } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { FIRST_OPEN_WAIT_MS } from '../../../ingester/dead-letters/bus-store.js';
import { waitFor } from '../../support/waiting.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, type RunningNats } from '../support/nats-server.js';

jest.setTimeout(90_000);

let nats: RunningNats;
let ing: RunningIngester | undefined;

beforeEach(async () => {
  nats = await startNats();
  const nc = await connect({ servers: nats.url });
  await (await jetstreamManager(nc)).streams.add({ name: 'SQUATTER', subjects: ['intake.deadletter.>'] });
  await nc.close();
});
afterEach(async () => {
  await ing?.stop('SIGKILL');
  ing = undefined;
  await nats.stop();
});

const readiness = async (): Promise<{ status: number; body: { status: string } }> => {
  const res = await fetch(`${ing!.adminUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string } };
};

it('is not ready until the dead-letter stream opens, and says so; ready once it opens', async () => {
  ing = await startIngester(handoffConfig(nats), { waitReady: false });
  const unready = await waitFor(
    'readyz naming the dead-letter stream',
    async () => {
      const r = await readiness();
      return r.status === 503 && r.body.status.includes('INTAKE_DEADLETTER') ? r : undefined;
    },
    15_000,
    100,
  );
  expect(unready.body.status).toMatch(/^the dead-letter stream INTAKE_DEADLETTER is not open on the bus yet \(/);
  // The subjects are free again: the next try opens the stream, and the replica is ready.
  const nc = await connect({ servers: nats.url });
  await (await jetstreamManager(nc)).streams.delete('SQUATTER');
  await nc.close();
  await waitFor('ready', async () => (await readiness()).status === 200, 15_000, 100);
  expect((await fetch(`${ing.adminUrl}/deadletter?limit=1`)).status).toBe(200);
});

it(`waits at most ${FIRST_OPEN_WAIT_MS / 1000} s for it: a stream the server keeps refusing takes no replica out for longer`, async () => {
  const started = Date.now();
  ing = await startIngester(handoffConfig(nats), { waitReady: false });
  await waitFor('readyz 503', async () => (await readiness()).status === 503, 15_000, 100);
  await waitFor(
    'ready without the stream',
    async () => (await readiness()).status === 200,
    FIRST_OPEN_WAIT_MS + 15_000,
    250,
  );
  expect(Date.now() - started).toBeGreaterThanOrEqual(FIRST_OPEN_WAIT_MS - 1_000);
  // The letters still cannot be used, and say why.
  const list = await fetch(`${ing.adminUrl}/deadletter?limit=1`);
  expect(list.status).toBe(503);
});
