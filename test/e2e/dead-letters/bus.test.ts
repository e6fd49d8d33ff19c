/**
 * The dead letter with the bus: two ingester processes and a real nats-server. A mapping failure
 * accepted by one replica is listed and replayed from the other (the stream INTAKE_DEADLETTER, not
 * a file in one pod); replays started on both replicas at once hand each payload on once; one
 * tenant flooding the dead letter pushes out only its own letters.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { jest } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { parse, stringify } from 'yaml';
import { waitFor } from '../../support/waiting.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import {
  handoffConfig,
  metricValue,
  readStream,
  startNats,
  tally,
  untilDeadLettersOpen,
  type RunningNats,
} from '../support/nats-server.js';
import { FIXED, integration, listLetters, replay, sendAs } from './support.js';

jest.setTimeout(120_000);

let nats: RunningNats;
const replicas: RunningIngester[] = [];
const SHARE = 3 * 1024 * 1024;
/** Mapping failures replayed by both replicas at once: enough that the two replays overlap. */
const LETTERS = 30;

beforeAll(async () => {
  nats = await startNats();
  for (let i = 0; i < 2; i++) {
    replicas.push(
      await startIngester((c) => {
        handoffConfig(nats)(c);
        (c.routes as unknown[]).push(integration('fixme', 'team-b'), integration('flood', 'team-a'));
        c.deadLetter = { maxBytes: 32 * 1024 * 1024, maxBytesPerNamespace: SHARE };
      }),
    );
  }
  // Ready takes events; the letters' stream opens just after (until then a mapping failure is a 503).
  for (const r of replicas) await untilDeadLettersOpen(r.adminUrl);
}, 60_000);

afterAll(async () => {
  for (const r of replicas) await r.stop('SIGKILL');
  await nats?.stop();
});

function useMapping(ing: RunningIngester, name: string, mapping: Record<string, unknown>): void {
  const config = parse(readFileSync(ing.configPath, 'utf8')) as { routes: Array<{ name: string; mapping?: unknown }> };
  (config.routes.find((r) => r.name === name) as { mapping?: unknown }).mapping = mapping;
  writeFileSync(ing.configPath, stringify(config));
}
const fixed = async (ing: RunningIngester): Promise<boolean> => {
  const r = await sendAs(ing, 'fixme', { hostname: 'probe', level: 1 }, '?dryRun=true');
  return r.status === 200 && (r.json() as { success?: boolean }).success === true;
};

it('bounds the dead-letter stream in bytes (it had no limit), dropping the oldest when the server must', async () => {
  const nc = await connect({ servers: nats.url });
  try {
    const info = await (await jetstreamManager(nc)).streams.info('INTAKE_DEADLETTER');
    expect(info.config.max_bytes).toBe(Math.floor(32 * 1024 * 1024 * 1.25));
    expect(info.config.discard).toBe('old');
  } finally {
    await nc.close();
  }
});

it('lists and replays from one replica a mapping failure the other accepted, once even when both replay at once', async () => {
  const [a, b] = replicas as [RunningIngester, RunningIngester];
  expect(a.stdout() + a.stderr()).toContain('stream INTAKE_DEADLETTER on the bus');
  const ids: string[] = [];
  for (let i = 0; i < LETTERS; i++) {
    const res = await sendAs(a, 'fixme', { hostname: `from-a-${i}`, level: 3 });
    expect(res.status).toBe(422);
    ids.push(res.headers.get('x-intake-dead-letter-id') as string);
  }
  // B sees A's letters (the stream, not A's disk).
  const listed = await waitFor(
    "B lists A's letters",
    async () => {
      const l = await listLetters(b, 'kind=mapping&integration=fixme');
      return l.count === LETTERS ? l : undefined;
    },
    20_000,
    100,
  );
  expect(listed.entries.map((e) => e.id).sort()).toEqual([...ids].sort());
  expect(listed.entries[0]).toMatchObject({
    kind: 'mapping',
    namespace: 'team-b',
    payload: { hostname: 'from-a-0', level: 3 },
  });

  for (const r of replicas) useMapping(r, 'fixme', FIXED);
  await waitFor('fixed mapping loaded on both', async () => (await fixed(a)) && (await fixed(b)), 15_000, 100);
  const [fromA, fromB] = await Promise.all([replay(a, 'kind=mapping'), replay(b, 'kind=mapping')]);
  expect(fromA.replayed + fromB.replayed).toBe(LETTERS);
  expect(fromA.failed + fromB.failed).toBe(0);
  // Both replays ran at once: each found letters, replayed by itself or held by the other (skipped).
  // (Each replaying some was too strict: on a busy machine one could claim every letter first.)
  expect(fromA.replayed + fromA.skipped).toBeGreaterThan(0);
  expect(fromB.replayed + fromB.skipped).toBeGreaterThan(0);

  const stored = await waitFor(
    'replayed events on the events stream',
    async () => {
      const all = (await readStream(nats.url, 'INTAKE_EVENTS')).filter((s) =>
        String(s.event.source).startsWith('from-a-'),
      );
      return all.length >= LETTERS ? all : undefined;
    },
    15_000,
    200,
  );
  const counts = tally(stored.map((s) => String(s.event.source)));
  expect(counts.size).toBe(LETTERS);
  expect([...counts.values()].every((n) => n === 1)).toBe(true);
  await waitFor(
    'none left',
    async () =>
      (await listLetters(a, 'integration=fixme')).count === 0 &&
      (await listLetters(b, 'integration=fixme')).count === 0,
    20_000,
    200,
  );
});

it('lets a tenant flooding the dead letter push out only its own letters on the bus', async () => {
  const [a, b] = replicas as [RunningIngester, RunningIngester];
  useMapping(b, 'fixme', { expression: '{"source": host}' });
  await waitFor('broken again on B', async () => !(await fixed(b)), 15_000, 100);
  const quiet = await sendAs(b, 'fixme', { hostname: 'b-kept', level: 1 });
  expect(quiet.status).toBe(422);
  const quietId = quiet.headers.get('x-intake-dead-letter-id');
  // Tenant A floods through both replicas: 24 payloads of 500 KB against a 3 MiB share.
  const blob = 'x'.repeat(500_000);
  for (let i = 0; i < 24; i++)
    expect((await sendAs(i % 2 ? b : a, 'flood', { hostname: 'a', blob, n: i })).status).toBe(422);
  const listed = await waitFor(
    'reconciled',
    async () => {
      const l = await listLetters(a);
      return l.entries.filter((e) => e.namespace === 'team-a').length <= 7 ? l : undefined;
    },
    30_000,
    500,
  );
  expect(listed.entries.some((e) => e.id === quietId)).toBe(true);
  expect(listed.entries.filter((e) => e.namespace === 'team-a').length).toBeGreaterThanOrEqual(4);
  const dropped =
    (await metricValue(
      a.adminUrl,
      'intake_deadletter_dropped_total{kind="mapping",namespace="team-a",reason="namespace_share"}',
    )) ?? 0;
  const droppedB =
    (await metricValue(
      b.adminUrl,
      'intake_deadletter_dropped_total{kind="mapping",namespace="team-a",reason="namespace_share"}',
    )) ?? 0;
  expect(dropped + droppedB).toBeGreaterThanOrEqual(12);
});
