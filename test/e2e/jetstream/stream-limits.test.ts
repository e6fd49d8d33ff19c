/**
 * The events stream is bounded by default: intake creates it with a max age, and with
 * createStream brings an existing stream with other limits (here none: max_age 0, max_bytes and
 * max_msgs -1) to the configured ones, so a changed streamConfig takes effect and delivered events
 * do not stay forever and fill the NATS store.
 */
import { DiscardPolicy, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, type RunningNats } from '../support/nats-server.js';

const running: Array<RunningIngester | RunningNats> = [];

afterAll(async () => {
  for (const r of running.reverse()) await ('child' in r ? r.stop('SIGKILL') : r.stop());
});

async function streamConfigOf(url: string, stream: string) {
  const nc = await connect({ servers: url });
  try {
    return (await (await jetstreamManager(nc)).streams.info(stream)).config;
  } finally {
    await nc.close();
  }
}

it('creates the events stream with the default max age', async () => {
  const nats = await startNats();
  running.push(nats);
  running.push(await startIngester(handoffConfig(nats)));
  const config = await streamConfigOf(nats.url, 'INTAKE_EVENTS');
  expect(config.max_age).toBe(nanos(72 * 3600 * 1000));
  expect(config.retention).toBe(RetentionPolicy.Limits);
}, 60_000);

it('brings an existing unbounded stream to the configured limits', async () => {
  const nats = await startNats();
  running.push(nats);
  const nc = await connect({ servers: nats.url });
  await (
    await jetstreamManager(nc)
  ).streams.add({
    name: 'INTAKE_EVENTS',
    subjects: ['intake.events.>'],
    discard: DiscardPolicy.New,
    duplicate_window: nanos(900_000),
    max_age: 0,
    max_bytes: -1,
    max_msgs: -1,
  });
  await nc.close();
  const ing = await startIngester(
    handoffConfig(nats, { jetstream: { streamConfig: { maxAge: '1h', maxBytes: 64 * 1024 * 1024 } } }),
  );
  running.push(ing);
  const config = await streamConfigOf(nats.url, 'INTAKE_EVENTS');
  expect(config.max_age).toBe(nanos(3600 * 1000));
  expect(config.max_bytes).toBe(64 * 1024 * 1024);
  expect(ing.stderr() + ing.stdout()).toMatch(/brought in line with streamConfig/);
}, 60_000);
