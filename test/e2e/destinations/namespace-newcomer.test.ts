/**
 * A namespace that starts sending while another, alone on a shared destination until then, holds
 * every in-flight slot with a receiver that hangs on its events: the newcomer gets its share at
 * once (on top of maxInFlight), through the built ingester, from the bus and from the outbox.
 * Before, it waited for the first namespace's requests to be answered or time out (30 s here):
 * one team's hanging receiver delayed another team's first deliveries.
 */
import type { ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/waiting.js';
import { startEventHandler, type EventHandler } from '../support/event-receiver.js';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';

const MAX_IN_FLIGHT = 4;

describe.each(['bus', 'outbox'] as const)('from the %s', (queue) => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-newcomer-'));
  let nats: RunningNats | undefined;
  let server: EventHandler;
  let ing: RunningIngester;
  const delivered = new Map<string, number>();
  const hanging: Array<{ res: ServerResponse; events: number }> = [];

  beforeAll(async () => {
    if (queue === 'bus') nats = await startNats();
    server = await startEventHandler((events, res) => {
      if (events.some((e) => e.source.startsWith('a-'))) return void hanging.push({ res, events: events.length });
      for (const e of events) delivered.set(e.source, Date.now());
      res.writeHead(200).end();
    });
    ing = await startIngester((c) => {
      if (nats) handoffConfig(nats)(c);
      else c.spool = { path: dir };
      c.destinations = [
        {
          name: 'hooks',
          http: { url: server.url, timeout: '30s' },
          delivery: { maxInFlight: MAX_IN_FLIGHT, backoffMin: '100ms', backoffMax: '500ms', maxAttempts: 100 },
          circuitBreaker: { enabled: false },
        },
      ];
      (c.routes as unknown[]).push(
        tenantRoute('newcomer-a', 'team-a', { destinations: ['hooks'] }),
        tenantRoute('newcomer-b', 'team-b', { destinations: ['hooks'] }),
      );
    });
    if (nats) await untilDeadLettersOpen(ing.adminUrl);
  }, 60_000);

  afterAll(async () => {
    for (const { res } of hanging.splice(0)) res.destroy();
    await ing?.stop('SIGKILL');
    await server?.close();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = async (integration: string, source: string): Promise<void> => {
    const res = await post(
      `${ing.url}/events/webhook_${integration}`,
      { source, severity: 3 },
      tenantAuth(integration),
    );
    expect(res.status).toBe(200);
  };

  it("delivers the newcomer's events while the other namespace's receiver hangs on every slot", async () => {
    // A alone: its receiver hangs on all MAX_IN_FLIGHT slots.
    for (let i = 0; i < 3 * MAX_IN_FLIGHT; i++) await send('newcomer-a', `a-${i}`);
    await waitFor(
      "A's requests holding every slot",
      async () => hanging.reduce((n, h) => n + h.events, 0) >= MAX_IN_FLIGHT,
      15_000,
      20,
    );
    const sent = Date.now();
    for (let i = 0; i < 2; i++) await send('newcomer-b', `b-${i}`);
    // Well before A's requests time out (30 s): B does not wait for them.
    await waitFor('B delivered beside A', async () => delivered.has('b-0') && delivered.has('b-1'), 10_000, 20);
    const tookMs = Math.max(...['b-0', 'b-1'].map((s) => (delivered.get(s) as number) - sent));
    console.log(`namespace newcomer (${queue}): B delivered ${tookMs} ms after it was sent, beside A's hanging slots`);
    // A got no more than it held: still MAX_IN_FLIGHT of its events at the receiver.
    expect(hanging.reduce((n, h) => n + h.events, 0)).toBe(MAX_IN_FLIGHT);
  }, 60_000);
});
