/**
 * An alert storm through two ingester replicas sharing the bus, one of them killed with SIGKILL
 * while it is delivering: at-least-once holds. Every signature ends in the real Alertmanager with
 * the state of the last event accepted for it (the events of one alert are applied in order and
 * written once per batch, with a guess of the state skipping the read), nothing goes to the dead
 * letter, and the killed replica's unacknowledged events are delivered by the other after ack_wait.
 * The load is bounded: 4 senders, 10 events a request, for a few seconds.
 */
import { waitFor } from '../../support/waiting.js';
import { activeAlerts, startAlertmanager, type RunningAlertmanager } from '../support/alertmanager.js';
import { basic, DEMO, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';

const SENDERS = 4;
const SIGNATURES_PER_SENDER = 50;
const BATCH = 10;
const STORM_MS = 6000;
const KILL_AFTER_MS = 2000;

let nats: RunningNats;
let am: RunningAlertmanager;
const replicas: RunningIngester[] = [];

beforeAll(async () => {
  [nats, am] = await Promise.all([startNats(), startAlertmanager()]);
  for (let i = 0; i < 2; i++)
    replicas.push(
      await startIngester((c) => {
        handoffConfig(nats, { jetstream: { timeout: '2s' } })(c);
        c.destinations = [
          {
            name: 'alertmanager',
            default: true,
            // timeout 1s: ack_wait is then 5 s, when the survivor takes over the killed replica's events.
            alertmanager: { urls: [am.url], timeout: '1s' },
            delivery: { backoffMin: '100ms', backoffMax: '500ms', maxAttempts: 100 },
          },
        ];
      }),
    );
}, 60_000);

afterAll(async () => {
  for (const r of replicas) await r.stop('SIGKILL');
  await Promise.all([am?.stop(), nats?.stop()]);
});

/** POSTs to the first replica that answers 200 (the killed one refuses connections). */
async function postUntilAccepted(body: string, key: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    for (const r of replicas) {
      if (r.child.exitCode !== null || r.child.signalCode !== null) continue;
      try {
        const res = await fetch(`${r.url}/events/webhook_demo`, {
          method: 'POST',
          headers: {
            authorization: basic(DEMO.user, DEMO.password),
            'content-type': 'application/json',
            'idempotency-key': key,
          },
          body,
          signal: AbortSignal.timeout(5000),
        });
        await res.text();
        if (res.status === 200) return;
      } catch {
        // Connection refused or reset: the other replica, or the next round.
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`request ${key} was never accepted`);
}

it('delivers the last state of every alert through a kill -9 of a delivering replica', async () => {
  const base = Date.now() - 60_000;
  /** Signature -> the trace of the last event sent for it (each sender owns its signatures, in order). */
  const last = new Map<string, string>();
  const until = Date.now() + STORM_MS;
  let sent = 0;
  const sender = async (w: number): Promise<void> => {
    for (let seq = 0; Date.now() < until; seq++) {
      const events = Array.from({ length: BATCH }, (_, i) => {
        const n = seq * BATCH + i;
        const signature = `storm-${w}-${n % SIGNATURES_PER_SENDER}`;
        const trace = `${w}-${n}`;
        last.set(signature, trace);
        // Strictly increasing event times per signature: the last one sent is the newest.
        return {
          source: `host-${w}`,
          severity: 'major',
          signature,
          agent_time: new Date(base + n).toISOString(),
          trace,
        };
      });
      await postUntilAccepted(JSON.stringify(events), `storm-${w}-${seq}`);
      sent += BATCH;
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const killer = (async () => {
    await new Promise((r) => setTimeout(r, KILL_AFTER_MS));
    const victim = replicas[0] as RunningIngester;
    // Mid-delivery: it has taken events from the bus that Alertmanager has not had yet.
    expect(
      await metricValue(victim.adminUrl, 'intake_destination_delivered_total{destination="alertmanager"}'),
    ).toBeGreaterThan(0);
    victim.child.kill('SIGKILL');
    await victim.exited;
  })();
  await Promise.all([...Array.from({ length: SENDERS }, (_, w) => sender(w)), killer]);
  expect(sent).toBeGreaterThanOrEqual(SENDERS * SIGNATURES_PER_SENDER);

  const survivor = replicas[1] as RunningIngester;
  const traceOf = (a: { annotations: Record<string, string> }): string | undefined =>
    (JSON.parse(a.annotations.custom_info ?? '{}') as { trace?: string }).trace;
  const wrong = await waitFor(
    'every alert in Alertmanager with its last event',
    async () => {
      const held = new Map((await activeAlerts(am.url)).map((a) => [a.labels.signature as string, traceOf(a)]));
      const missing = [...last].filter(([signature, trace]) => held.get(signature) !== trace);
      return missing.length === 0 ? missing : undefined;
    },
    30_000,
    250,
  ).catch(async (err: Error) => {
    const held = new Map((await activeAlerts(am.url)).map((a) => [a.labels.signature as string, traceOf(a)]));
    const missing = [...last].filter(([signature, trace]) => held.get(signature) !== trace).slice(0, 5);
    throw new Error(`${err.message}: ${JSON.stringify(missing.map(([s, t]) => [s, t, held.get(s)]))}`);
  });
  expect(wrong).toEqual([]);
  expect(last.size).toBe(SENDERS * SIGNATURES_PER_SENDER);
  expect(
    await metricValue(survivor.adminUrl, 'intake_destination_dead_lettered_total{destination="alertmanager"}'),
  ).toBeFalsy();
  await waitFor(
    'nothing left to deliver',
    async () => (await metricValue(survivor.adminUrl, 'intake_destination_lag{destination="alertmanager"}')) === 0,
    30_000,
    500,
  );
}, 90_000);
