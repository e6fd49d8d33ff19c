/**
 * intake_destination_oldest_pending_seconds through the real ingester, standalone (the outbox)
 * and with the bus: while the receiver answers 500 the oldest waiting event's age grows with the
 * clock (measured with the lag, every 5 s from the outbox and 10 s from the bus); once the
 * receiver recovers and everything is delivered it is 0 again. The destination alert
 * IntakeDestinationBacklogOld reads it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, startNats, type RunningNats } from '../support/nats-server.js';

jest.setTimeout(120_000);

const dirs: string[] = [];
let nats: RunningNats | undefined;

afterAll(async () => {
  await nats?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe.each(['outbox', 'bus'] as const)('delivered from the %s', (mode) => {
  let receiver: EventReceiver;
  let ing: RunningIngester;

  beforeAll(async () => {
    receiver = await startEventReceiver();
    const dir = mkdtempSync(join(tmpdir(), 'intake-oldest-pending-e2e-'));
    dirs.push(dir);
    if (mode === 'bus') nats ??= await startNats();
    ing = await startIngester((c) => {
      if (mode === 'bus') handoffConfig(nats as RunningNats)(c);
      else c.spool = { path: dir };
      c.destinations = [
        {
          name: 'tickets',
          default: true,
          http: { url: receiver.url, timeout: '1s' },
          // Retried, never dead-lettered, while the test runs.
          delivery: { maxAttempts: 1000, backoffMin: '100ms', backoffMax: '500ms' },
          circuitBreaker: { enabled: false },
        },
      ];
    });
  }, 60_000);

  afterAll(async () => {
    await ing?.stop();
    await receiver?.close();
  });

  const oldest = async (): Promise<number> =>
    (await metricValue(ing.adminUrl, 'intake_destination_oldest_pending_seconds{destination="tickets"}')) ?? -1;

  it('grows with the age of the oldest waiting event, and is 0 once all are delivered', async () => {
    // From the bus the gauge exists once the consumers' first look at their backlog is done, which
    // may come just after the ingester says ready (absent until then: -1 here).
    await waitFor('the oldest pending measured', async () => (await oldest()) === 0, 15_000, 50);
    receiver.failWith = { status: 500, body: 'down' };
    const sentAt = Date.now();
    const res = await post(`${ing.url}/events/webhook_demo`, [{ source: `${mode}-old`, severity: 3 }], {
      authorization: basic(DEMO.user, DEMO.password),
    });
    expect(res.status).toBe(200);
    // A newer event behind it does not make the backlog look younger.
    await new Promise((r) => setTimeout(r, 1000));
    await post(`${ing.url}/events/webhook_demo`, [{ source: `${mode}-new`, severity: 3 }], {
      authorization: basic(DEMO.user, DEMO.password),
    });
    const age = await waitFor(
      'the oldest waiting event older than 3 s',
      async () => {
        const v = await oldest();
        return v >= 3 ? v : undefined;
      },
      40_000,
      250,
    );
    // Its age, not the newer event's: at most the time since the first was sent.
    expect(age).toBeLessThanOrEqual((Date.now() - sentAt) / 1000 + 0.5);
    receiver.failWith = undefined;
    await waitFor('both delivered', async () => receiver.accepted.size === 2, 30_000, 100);
    await waitFor('0 once nothing waits', async () => (await oldest()) === 0, 30_000, 250);
  });
});
