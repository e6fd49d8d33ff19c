/**
 * Dead-letter bookkeeping with the bus (letters in the INTAKE_DEADLETTER stream, claims in its
 * key-value bucket), through the real process and a real nats-server: kill -9 of the ingester in
 * the middle of a replay, again and again. A replay cut between handing a letter to the events
 * stream and removing it left the letter listed (its claim held until the lease ended), and a
 * later replay would send it again. Now every replica finishes such a replay from its claim: after
 * each restart, every letter the killed process held claimed is handed on and leaves the list, no
 * letter whose event the destination received stays listed, and no event is lost (each one
 * received, or still listed).
 */
import { jest } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { adminPost } from '../../support/admin.js';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import {
  handoffConfig,
  metricValue,
  startNats,
  untilDeadLettersOpen,
  type RunningNats,
} from '../support/nats-server.js';
import { listLetters } from './support.js';

jest.setTimeout(300_000);

let nats: RunningNats;
let receiver: EventReceiver;
let ing: RunningIngester | undefined;

beforeAll(async () => {
  nats = await startNats();
  receiver = await startEventReceiver();
});

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await receiver?.close();
  await nats?.stop();
});

/**
 * A started ingester whose dead-letter store is open: the process is ready once it can take events,
 * and the letters' stream on the bus opens just after (until then the admin list answers 503).
 */
const start = async (): Promise<RunningIngester> => {
  const started = await startIngester((c) => {
    handoffConfig(nats)(c);
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url, timeout: '1s' } }];
  });
  await untilDeadLettersOpen(started.adminUrl);
  return started;
};

const deadLettered = async (): Promise<number> =>
  (await metricValue(
    ing!.adminUrl,
    'intake_destination_dead_lettered_total{destination="tickets",reason="http_400"}',
  )) ?? 0;

/** Letters this process replayed (handed on) so far. */
const replayedSoFar = async (i: RunningIngester): Promise<number> => {
  const text = await (await fetch(`${i.adminUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('intake_deadletter_replayed_total{') && l.includes('result="replayed"'))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
};

/** The letters (by seq) that hold a replay claim in the bus's claims bucket. */
async function claimedSeqs(): Promise<Set<number>> {
  const nc = await connect({ servers: nats.url });
  try {
    const kv = await new Kvm(nc).open('INTAKE_DEADLETTER-claims');
    const seqs = new Set<number>();
    for await (const key of await kv.keys()) {
      const entry = await kv.get(key);
      if (entry?.operation === 'PUT') seqs.add(Number(key.replace(/^seq-/, '')));
    }
    return seqs;
  } finally {
    await nc.close();
  }
}

/** Of `seqs`, the letters still kept in the letters' stream. */
async function keptSeqs(seqs: Set<number>): Promise<number[]> {
  const nc = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(nc);
    const kept: number[] = [];
    for (const seq of seqs) {
      if (await jsm.streams.getMessage('INTAKE_DEADLETTER', { seq }).catch(() => null)) kept.push(seq);
    }
    return kept;
  } finally {
    await nc.close();
  }
}

/**
 * Kills `running` with SIGKILL at a moment it holds a claim on a letter still kept: the process is
 * frozen (SIGSTOP) and looked at until such a moment comes (a claim lasts a few round trips, so a
 * kill timed by the replayed count alone often landed between two letters). Gives up after
 * `tries` and kills anyway.
 */
async function killHoldingAClaim(running: RunningIngester, tries = 200): Promise<void> {
  for (let n = 0; n < tries; n++) {
    running.child.kill('SIGSTOP');
    if ((await keptSeqs(await claimedSeqs())).length > 0) break;
    running.child.kill('SIGCONT');
    await new Promise((resolve) => setTimeout(resolve, 2 + (n % 7)));
  }
  await running.stop('SIGKILL');
}

const lastRequestAt = (): number => receiver.requests.at(-1)?.atMs ?? 0;

it('kill -9 during a replay: a letter whose event reached the events stream is not listed after the restart, and none is lost', async () => {
  receiver.refuse = () => true;
  ing = await start();
  const total = 300;
  for (let n = 0; n < total / 100; n++) {
    const res = await post(
      `${ing.url}/events/webhook_demo`,
      Array.from({ length: 100 }, (_, i) => ({ source: `bus-crash-${n * 100 + i}`, severity: 3 })),
      { authorization: basic(DEMO.user, DEMO.password) },
    );
    expect(res.status).toBe(200);
  }
  await waitFor('every event dead-lettered', async () => (await deadLettered()) === total, 60_000, 100);
  const ids = new Set((await listLetters(ing, 'kind=delivery&limit=10000')).entries.map((e) => String(e.event?.id)));
  expect(ids.size).toBe(total);
  receiver.refuse = () => false;

  let cutLetters = 0;
  for (let round = 0; round < 6; round++) {
    // A replay over every letter, cut by kill -9 in its middle (once it replayed a few) while the
    // process holds a letter claimed.
    const replaying = fetch(`${ing.adminUrl}/deadletter/replay?limit=10000`, adminPost()).catch(() => undefined);
    const running = ing;
    await waitFor('the replay under way', async () => (await replayedSoFar(running)) >= 3 + round * 7, 30_000, 10);
    await killHoldingAClaim(running);
    await replaying;
    // The letters whose replay was cut: claimed by the killed process, still kept.
    const claimed = await claimedSeqs();
    ing = await start();
    const cut = (await listLetters(ing, 'kind=delivery&limit=10000')).entries
      .filter((e) => claimed.has(Number((e as { seq?: number }).seq)))
      .map((e) => String(e.event?.id));
    cutLetters += cut.length;
    // What reached the events stream is delivered after the restart; a replay that was cut is
    // finished from its claim (once the claim is older than a hand-on could take).
    let listed: string[] = [];
    let listedAndDelivered: string[] = [];
    await waitFor(
      'the cut replays finished, no letter both delivered and listed, every event received or listed',
      async () => {
        listed = (await listLetters(ing!, 'kind=delivery&limit=10000')).entries.map((e) => String(e.event?.id));
        listedAndDelivered = listed.filter((id) => receiver.accepted.has(id));
        return (
          listedAndDelivered.length === 0 &&
          cut.every((id) => receiver.accepted.has(id)) &&
          [...ids].every((id) => receiver.accepted.has(id) || listed.includes(id)) &&
          Date.now() - lastRequestAt() > 1000
        );
      },
      45_000,
      250,
    ).catch(() => undefined);
    expect({ round, listedAndDelivered }).toEqual({ round, listedAndDelivered: [] });
    expect({ round, cutNotFinished: cut.filter((id) => listed.includes(id) || !receiver.accepted.has(id)) }).toEqual({
      round,
      cutNotFinished: [],
    });
    expect({ round, lost: [...ids].filter((id) => !receiver.accepted.has(id) && !listed.includes(id)) }).toEqual({
      round,
      lost: [],
    });
    if (listed.length === 0) break;
  }
  // A final replay hands on what is left: every event received.
  await waitFor(
    'every letter replayed',
    async () => {
      await fetch(`${ing!.adminUrl}/deadletter/replay?limit=10000`, adminPost());
      return (await listLetters(ing!, 'kind=delivery&limit=10000')).count === 0;
    },
    60_000,
    2000,
  );
  await waitFor('every event received', async () => [...ids].every((id) => receiver.accepted.has(id)), 30_000, 200);
  // At least one replay was cut with a letter claimed (what this test is about).
  expect(cutLetters).toBeGreaterThan(0);
});
